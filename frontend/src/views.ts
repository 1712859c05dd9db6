/**
 * The comparison views: server-paged tables (operator, module, kernel, api, communication,
 * memory) and the memory view's curves + peak attribution. A 404/422 answer means "not
 * available for this pair" and is shown as such.
 */
import {ApiError, fetchReady, type Loading, Stale, url} from "./api";
import {lineChart, type Marker, type Series} from "./charts";
import {h, replace} from "./dom";
import {fmtNum, isNum, UNIT, isDiffKey} from "./format";
import {COLORS, VIEW_LABEL} from "./overview";
import type {SideSel, TableQuery, ViewName} from "./state";
import {autoColumns, pagedTable, staticTable} from "./table";
import type {CurveSide, MemoryCurve, Peak, TablePage} from "./types";

export interface ViewCtx {
  base: SideSel;
  target: SideSel;
  query: TableQuery;
  jump: boolean;
  alive(): boolean;
  onQuery(q: TableQuery): void;
}

export function pairParams(base: SideSel, target: SideSel): Record<string, string | number | null> {
  return {baseline: base.worker, target: target.worker, base_step: base.step, target_step: target.step};
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
    return h("div", {class: "notice na", role: "status", "data-state": "not-available"},
             h("b", null, `${what} is not available for this pair.`), " ", h("span", {class: "muted"}, msg));
  }
  return h("div", {class: "notice error", role: "alert", "data-state": "error"}, h("b", null, `${what} failed: `), msg);
}

function tableUrl(view: string, ctx: ViewCtx, q: TableQuery): string {
  return url(`compare/${view}`, {...pairParams(ctx.base, ctx.target), sort: q.sort || null, order: q.sort ? q.order || null : null,
                                 q: q.q || null, min_diff: q.minDiff || null, offset: q.offset, limit: q.limit});
}

function diffUnit(page: TablePage): string {
  const c = page.columns.find((x) => isDiffKey(x.key) && UNIT[x.type]);
  return c ? UNIT[c.type] : "ms";
}

/** Render a paged table view into host; resolves when the first page is shown (or failed). */
export async function renderTableView(view: ViewName, host: HTMLElement, ctx: ViewCtx, title?: string): Promise<void> {
  const what = title ?? `The ${VIEW_LABEL[view]} comparison`;
  const fetchPage = (q: TableQuery) => fetchReady<TablePage>(tableUrl(view, ctx, q), ctx.alive,
                                                               (l) => { if (ctx.alive()) replace(host, progressBox("Comparing", l)); });
  replace(host, progressBox(`Loading the ${VIEW_LABEL[view]} comparison`, null));
  try {
    const first = await fetchPage(ctx.query);
    if (!ctx.alive()) return;
    if (!first || !Array.isArray(first.columns) || !Array.isArray(first.rows)) {
      replace(host, failure(what, new Error("unexpected answer from the server")));
      return;
    }
    replace(host, pagedTable({label: `${VIEW_LABEL[view]} comparison`, query: ctx.query, tree: view === "module",
                              jump: ctx.jump, diffUnit: diffUnit(first),
                              fetchPage: (q) => fetchReady<TablePage>(tableUrl(view, ctx, q), ctx.alive, () => undefined),
                              onQuery: ctx.onQuery}, first));
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure(what, e));
  }
}

function peaks(side: CurveSide): Peak[] {
  const p = side.peak;
  if (Array.isArray(p)) return p;
  if (p && typeof p === "object") return [p];
  const ys = side.allocated_mb ?? [];
  if (!ys.length) return [];
  let k = 0;
  for (let i = 1; i < ys.length; i++) if (ys[i] > ys[k]) k = i;
  return [{t_ms: side.t_ms[k], allocated_mb: ys[k]}];
}

function curveChart(data: MemoryCurve): HTMLElement {
  const series: Series[] = [];
  const markers: Marker[] = [];
  const sides: Array<["Baseline" | "Target", CurveSide | null | undefined, string]> =
    [["Baseline", data.baseline, COLORS.base], ["Target", data.target, COLORS.tgt]];
  for (const [name, side, color] of sides) {
    if (!side || !Array.isArray(side.t_ms) || !side.t_ms.length) continue;
    if (side.allocated_mb?.length) series.push({name: `${name} allocated`, color, xs: side.t_ms, ys: side.allocated_mb});
    if (side.reserved_mb?.length) series.push({name: `${name} reserved`, color, dash: true, xs: side.t_ms, ys: side.reserved_mb});
    for (const p of peaks(side)) {
      const y = isNum(p.allocated_mb) ? p.allocated_mb : isNum(p.reserved_mb) ? p.reserved_mb : null;
      if (y === null || !isNum(p.t_ms)) continue;
      markers.push({x: p.t_ms, y, color, label: `${name} peak ${fmtNum(y)} MB`});
    }
  }
  if (!series.length) return h("div", {class: "notice na"}, "No memory samples on either side.");
  return lineChart(series, markers, {xLabel: "time (ms)", yUnit: "MB", title: "Memory over time, baseline and target"});
}

export async function renderMemoryView(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const curveBox = h("div", {class: "panel"}, progressBox("Loading memory curves", null));
  const attrBox = h("div");
  const tableBox = h("div");
  replace(host, h("h2", {style: {marginTop: "0"}}, "Memory over time"), curveBox, attrBox,
          h("h2", null, "Memory by operator"), tableBox);
  const curve = (async () => {
    try {
      const data = await fetchReady<MemoryCurve>(url("compare/memory_curve", pairParams(ctx.base, ctx.target)), ctx.alive,
                                                 (l) => { if (ctx.alive()) replace(curveBox, progressBox("Comparing memory", l)); });
      if (!ctx.alive()) return;
      replace(curveBox, curveChart(data));
      const rows = Array.isArray(data.attribution) ? data.attribution : [];
      if (rows.length) {
        replace(attrBox, h("h2", null, "Peak attribution"),
                staticTable(data.attribution_columns ?? autoColumns(rows), rows, "Peak attribution"));
      }
    } catch (e) {
      if (e instanceof Stale || !ctx.alive()) return;
      replace(curveBox, failure("The memory curve", e));
    }
  })();
  await Promise.all([curve, renderTableView("memory", tableBox, ctx, "The memory comparison by operator")]);
}
