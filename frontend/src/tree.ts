/**
 * Tree rows of a table page (module view): each row has `path` (`/TinyLM_0/Block_1/MLP_1`),
 * `depth` and `kind` ("module" or "op"). Operator rows belong to the module at their path and
 * sit one level below it. Collapsing a module hides every row under its path.
 */
import {isNum} from "./format";
import type {Row} from "./types";

export function isTreeRows(rows: Row[]): boolean {
  return rows.length > 0 && rows.every((r) => typeof r.path === "string" && isNum(r.depth));
}

export const isOp = (r: Row) => r.kind === "op";

/** Indent level of a row: its depth, one more for an operator under its module. */
export function level(r: Row): number {
  return (isNum(r.depth) ? r.depth : 0) + (isOp(r) ? 1 : 0);
}

/** The short label in the tree: the module's own name (last path part) or the operator name. */
export function treeLabel(r: Row): string {
  if (typeof r.name === "string" && r.name) return r.name;
  const p = String(r.path ?? "");
  return p.slice(p.lastIndexOf("/") + 1) || p;
}

/** The collapse key of a module row (its path); operators cannot be collapsed. */
export function nodeKey(r: Row): string | null {
  return isOp(r) ? null : String(r.path ?? "");
}

/** Whether row r lies under the collapsed module path c. */
function under(r: Row, c: string): boolean {
  const p = String(r.path ?? "");
  return isOp(r) ? p === c || p.startsWith(c + "/") : p.startsWith(c + "/");
}

export interface TreeView {
  hidden: boolean[];
  hasKids: boolean[];
  base: number;          // the smallest level on the page (indent 0)
}

export function treeView(rows: Row[], collapsed: Set<string>, showOps: boolean): TreeView {
  const kept = rows.map((r) => showOps || !isOp(r));
  const hasKids = rows.map((r, i) => {
    if (isOp(r)) return false;
    for (let j = i + 1; j < rows.length; j++) {
      if (!kept[j]) continue;
      return level(rows[j]) > level(r) && under(rows[j], String(r.path ?? ""));
    }
    return false;
  });
  const hidden = rows.map((r, i) => !kept[i] || [...collapsed].some((c) => under(r, c)));
  const levels = rows.filter((_, i) => kept[i]).map(level);
  return {hidden, hasKids, base: levels.length ? Math.min(...levels) : 0};
}

/** The parent module path of a path ("/A/B" -> "/A", "/A" -> ""). */
function parentPath(p: string): string {
  const i = p.lastIndexOf("/");
  return i > 0 ? p.slice(0, i) : "";
}

interface Node {
  row: Row | null;
  items: Array<Row | string>;      // its operator rows and child module paths, in first-seen order
}

/**
 * The rows in tree order: each module followed by its operators and child modules (in the
 * order the server first lists them), and a placeholder row (`virtual: true`, no figures) for
 * every ancestor the server has no row for (`/[ BACKWARD ]` above `/[ BACKWARD ]/Loss_0`),
 * so that every row sits under its real parent and can be collapsed with it.
 */
export function treeOrder(rows: Row[]): Row[] {
  const nodes = new Map<string, Node>();
  const roots: string[] = [];
  const node = (p: string): Node => {
    let n = nodes.get(p);
    if (!n) {
      n = {row: null, items: []};
      nodes.set(p, n);
      const par = parentPath(p);
      if (par) node(par).items.push(p);
      else roots.push(p);
    }
    return n;
  };
  const loose: Row[] = [];
  for (const r of rows) {
    const p = String(r.path ?? "");
    if (!p || p === "/") {
      loose.push(r);
      continue;
    }
    const n = node(p);
    if (isOp(r)) n.items.push(r);
    else if (!n.row) n.row = r;
    else n.items.push(r);              // a second row for one module path: keep it, under the first
  }
  const out: Row[] = [];
  const walk = (p: string) => {
    const n = nodes.get(p)!;
    out.push(n.row ?? {path: p, name: p.slice(p.lastIndexOf("/") + 1), kind: "module", virtual: true,
                       depth: p.split("/").length - 1});
    for (const it of n.items) {
      if (typeof it === "string") walk(it);
      else out.push(it);
    }
  };
  roots.forEach(walk);
  return [...loose, ...out];
}
