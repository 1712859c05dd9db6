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
