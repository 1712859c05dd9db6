/**
 * What the views share: a server-paged `compare/<route>` table (showTable), the pair's
 * request parameters, and the progress / "not available" notices. A 404/422 answer means
 * "not available for this pair" and shows the server's reason.
 */
import {ApiError, fetchReady, type Loading, Stale, url} from "./api";
import {h, replace} from "./dom";
import {isDiffKey, isNum, MIN_DIFF_SCALE, UNIT} from "./format";
import type {ViewCtx} from "./registry";
import type {SideSel, TableQuery} from "./state";
import {pagedTable} from "./table";
import type {Column, Row, TablePage} from "./types";

/** The match editor's current saved name map (`name_map=<name>`), sent by every comparison route. */
let nameMap = "";

export function setNameMap(name: string): void {
  nameMap = name;
}

export function currentNameMap(): string {
  return nameMap;
}

/** The pair's parameters of every comparison route (and `export`), with the current name map. */
export function pairParams(base: SideSel, target: SideSel, compat: boolean,
                           perStep: boolean | null = null): Record<string, string | number | null> {
  return {baseline: base.worker, target: target.worker, base_step: base.step, target_step: target.step,
          reference_compat: compat ? 1 : null, per_step: perStep === null ? null : perStep ? 1 : 0,
          name_map: nameMap || null};
}

/**
 * One line over a table: what its totals are (per step or whole capture, the server's
 * `figures.note`) and the switch to the other choice, the same switch as the overview's.
 */
function figuresNote(page: TablePage, ctx: ViewCtx): HTMLElement | null {
  const f = page.figures;
  if (!f || typeof f.note !== "string" || !f.note) return null;
  const sb = f.steps_count?.baseline, st = f.steps_count?.target;
  const differ = isNum(sb) && isNum(st) && sb > 0 && st > 0 && sb !== st;
  return h("p", {class: "muted intro figures", "data-role": "figures", "data-per-step": String(!!f.per_step)}, f.note,
           differ || f.per_step ? " " : null,
           differ || f.per_step ? h("button", {class: "linkish", type: "button", "data-role": "per-step-switch",
                                               onClick: () => ctx.onPerStep(!f.per_step)},
                                    f.per_step ? "Show whole-capture totals" : "Show per-step figures") : null);
}

/** The page's own notes: what the table is made of (`note`) and why a side is empty (`notes`). */
function pageNotes(page: TablePage): HTMLElement | null {
  const notes = [page.note, ...(Array.isArray(page.notes) ? page.notes : [])]
    .filter((n): n is string => typeof n === "string" && !!n);
  if (!notes.length) return null;
  return h("div", {class: "notice", role: "note", "data-role": "table-notes"},
           h("ul", {class: "notes"}, ...notes.map((n) => h("li", null, n))));
}

export function progressBox(what: string, l: Loading | null): HTMLElement {
  const p = l?.progress;
  const pct = isNum(p) ? Math.round(p * 100) : null;
  return h("div", {class: "notice", role: "status"},
           h("div", null, `${what}${pct !== null ? ` — ${pct}%` : "…"}`),
           h("div", {class: "progress" + (pct ? "" : " indet"), role: "progressbar", "aria-valuemin": "0",
                     "aria-valuemax": "100", "aria-valuenow": pct !== null ? String(pct) : null},
             h("div", {style: {width: `${pct ?? 0}%`}})),
           l?.message && l.message !== "working…" ? h("div", {class: "muted"}, l.message) : null);
}

/** A notice for a failed request: "not available" for 404/422, an error otherwise. */
export function failure(what: string, e: unknown): HTMLElement {
  const msg = e instanceof Error ? e.message : String(e);
  if (e instanceof ApiError && (e.status === 404 || e.status === 422)) {
    const why = msg.replace(/^[^:]*\bnot available\b[^:]*:\s*/i, "");      // the server's own "X not available:" said once
    return h("div", {class: "notice na", role: "status", "data-state": "not-available"},
             h("b", null, `${what} is not available for this pair.`), " ", h("span", {class: "muted"}, why));
  }
  return h("div", {class: "notice error", role: "alert", "data-state": "error"}, h("b", null, `${what} failed: `), msg);
}

/** The diff column's type per route, learnt from the first page (min |diff| is typed in its UI unit). */
const diffTypes = new Map<string, string>();

/** The column min |diff| filters on: the server's `diff_col` when it says, else the first diff column with a unit. */
function diffColumn(page: TablePage): {col: Column | undefined; named: boolean} {
  const cols = page.columns;
  const named = cols.find((x) => x.key === page.diff_col);
  if (named) return {col: named, named: true};
  return {col: cols.find((x) => isDiffKey(x.key) && UNIT[x.type]) ?? cols.find((x) => isDiffKey(x.key) && x.type !== "ratio"),
          named: false};
}

function tableUrl(route: string, ctx: Pick<ViewCtx, "base" | "target" | "compat" | "perStep">, q: TableQuery): string {
  const md = q.minDiff && isNum(Number(q.minDiff)) ? Number(q.minDiff) * (MIN_DIFF_SCALE[diffTypes.get(route) ?? ""] ?? 1) : null;
  return url(`compare/${route}`, {...pairParams(ctx.base, ctx.target, ctx.compat, ctx.perStep), sort: q.sort || null, order: q.sort ? q.order || null : null,
                                  q: q.q || null, min_diff: md || null, offset: q.offset, limit: q.limit});
}

export interface TableSpec {
  route: string;
  label: string;                  // "Operator comparison"
  what: string;                   // "The Operator comparison" (for notices)
  tree?: boolean;
  extra?: HTMLElement | null;
  /** Controls shown in a row's first cell (the match editor's pair / split). */
  rowAction?: (r: Row) => HTMLElement | null;
}

/** Fetch and show one server-paged table into host; resolves when the first page is shown (or failed). */
export async function showTable(host: HTMLElement, spec: TableSpec, ctx: ViewCtx, query: TableQuery,
                                onQuery: (q: TableQuery) => void): Promise<void> {
  const {route} = spec;
  const get = (q: TableQuery, progress: (l: Loading) => void) => fetchReady<TablePage>(tableUrl(route, ctx, q), ctx.alive, progress);
  replace(host, progressBox(`Loading the ${spec.label}`, null));
  try {
    const known = diffTypes.has(route);
    let first = await get(query, (l) => { if (ctx.alive()) replace(host, progressBox(`Computing the ${spec.label}`, l)); });
    if (!ctx.alive()) return;
    if (!first || !Array.isArray(first.columns) || !Array.isArray(first.rows)) {
      replace(host, failure(spec.what, new Error("unexpected answer from the server")));
      return;
    }
    const {col: dc, named} = diffColumn(first);
    diffTypes.set(route, dc?.type ?? "");
    if (!known && query.minDiff && (MIN_DIFF_SCALE[dc?.type ?? ""] ?? 1) !== 1) first = await get(query, () => undefined);
    if (!ctx.alive()) return;
    replace(host, figuresNote(first, ctx), pageNotes(first), pagedTable({label: spec.label, query, tree: !!spec.tree, jump: ctx.jump, extra: spec.extra,
                              rowAction: spec.rowAction,
                              diffUnit: dc ? UNIT[dc.type] ?? "" : "", onQuery,
                              diffLabel: dc && named ? dc.label.replace(/\s*\([^)]*\)\s*$/, "") : "",
                              fetchPage: (q) => get(q, () => undefined)}, first));
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure(spec.what, e));
  }
}
