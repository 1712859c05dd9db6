/**
 * The Memory view: each side's peak (allocated / reserved) as headline figures, both memory
 * curves with the peaks marked (compare/memory_curve), what was held at the peak by module
 * and operator (compare/memory_peak), and memory by operator (compare/memory).
 */
import {fetchReady, Stale, url} from "./api";
import {lineChart, type Marker, type Series} from "./charts";
import {h, replace} from "./dom";
import {fmtNum, isNum, MEMORY_UNITS} from "./format";
import {COLORS, kpi} from "./overview";
import {defaultQuery, type TableQuery} from "./state";
import {staticTable} from "./table";
import type {Column, CurveSide, MemoryCurve, Peak} from "./types";
import type {ViewCtx, ViewDef} from "./registry";
import {failure, pairParams, progressBox, showTable} from "./views";

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
      markers.push({x: p.t_ms, y, color, label: `${name} peak ${fmtNum(y)} MiB at ${fmtNum(p.t_ms)} ms`});
    }
  }
  if (!series.length) return h("div", {class: "notice na"}, "No memory samples on either side.");
  return lineChart(series, markers, {xLabel: "time from the side's first sample (ms)", yUnit: "MiB",
                                     title: "Memory over time, baseline and target"});
}

const peakOf = (s: CurveSide | null | undefined): Peak | null => (s ? peaks(s)[0] ?? null : null);

function peakKpis(data: MemoryCurve): HTMLElement {
  const pb = peakOf(data.baseline), pt = peakOf(data.target);
  const out = h("div", {class: "kpis"});
  for (const [key, name] of [["allocated_mb", "Peak allocated"], ["reserved_mb", "Peak reserved"]] as const) {
    const b = pb?.[key], t = pt?.[key];
    if (isNum(b) || isNum(t)) out.append(kpi(name, b, t, "MiB"));
  }
  return out;
}

/** Which memory component each side's curve shows, why its peak may differ from the overview's card, and the units. */
function aboutCurves(data: MemoryCurve): HTMLElement {
  const label = (s: CurveSide | null | undefined) => s?.component_label || s?.component || null;
  const lb = label(data.baseline), lt = label(data.target);
  const notes = Array.isArray(data.notes) ? data.notes.filter((n) => typeof n === "string" && n) : [];
  return h("div", null,
    lb || lt ? h("p", {class: "muted intro", "data-role": "curve-component"},
                 lb === lt ? `Curves of ${lb}.` : `Curves of: baseline ${lb ?? "—"}; target ${lt ?? "—"}.`, " ", MEMORY_UNITS)
      : h("p", {class: "muted intro"}, MEMORY_UNITS),
    notes.length ? h("div", {class: "notice warn", role: "note", "data-role": "memory-notes"},
                     h("ul", {class: "notes"}, ...notes.map((n) => h("li", null, n)))) : null);
}

const ATTRIBUTION_COLUMNS: Column[] = [
  {key: "name", label: "Held at peak by", type: "text"}, {key: "kind", label: "Kind", type: "text"},
  {key: "b_bytes", label: "Base at Peak", type: "bytes"}, {key: "t_bytes", label: "Target at Peak", type: "bytes"},
  {key: "diff_bytes", label: "Diff", type: "bytes"}];

async function renderMemoryView(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const kpiBox = h("div");
  const aboutBox = h("div", {"data-role": "memory-about"});
  const curveBox = h("div", {class: "panel"}, progressBox("Loading the memory curves", null));
  const peakNote = h("p", {class: "muted intro"}, "Memory allocated before each side's peak and still live at it, "
                     + "by module (path) and by operator; the largest increase first.");
  const peakBox = h("div", {"data-role": "peak-attribution"});
  const tableBox = h("div", {"data-role": "memory-table"});
  replace(host, h("h2", {style: {marginTop: "0"}}, "Peak memory"), aboutBox, kpiBox, curveBox,
          h("h2", null, "Peak attribution"), peakNote, peakBox, h("h2", null, "Memory by operator"), tableBox);
  let attribution: MemoryCurve["attribution"] = [];
  const curve = (async () => {
    try {
      const data = await fetchReady<MemoryCurve>(url("compare/memory_curve", pairParams(ctx.base, ctx.target, ctx.compat)), ctx.alive,
                                                 (l) => { if (ctx.alive()) replace(curveBox, progressBox("Comparing memory", l)); });
      if (!ctx.alive()) return;
      attribution = Array.isArray(data.attribution) ? data.attribution : [];
      replace(kpiBox, peakKpis(data));
      replace(aboutBox, aboutCurves(data));
      replace(curveBox, curveChart(data));
      const pb = peakOf(data.baseline), pt = peakOf(data.target);
      if (isNum(pb?.t_ms) || isNum(pt?.t_ms)) {
        peakNote.textContent = `Memory allocated before each side's peak (baseline at ${fmtNum(pb?.t_ms)} ms, target at `
          + `${fmtNum(pt?.t_ms)} ms) and still live at it, by module (path) and by operator; the largest increase first.`;
      }
    } catch (e) {
      if (e instanceof Stale || !ctx.alive()) return;
      replace(curveBox, failure("The memory curve", e));
    }
  })();
  let peakQuery: TableQuery = {...defaultQuery(), limit: 10};
  const peak = showTable(peakBox, {route: "memory_peak", label: "Peak attribution", what: "The peak attribution"},
                         ctx, peakQuery, (q) => { peakQuery = q; });
  const table = showTable(tableBox, {route: "memory", label: "Memory comparison by operator",
                                     what: "The memory comparison by operator"}, ctx, ctx.query, (q) => ctx.onQuery(q));
  await Promise.all([curve, peak, table]);
  // an older server without memory_peak: the attribution that came with the curves
  if (ctx.alive() && attribution?.length && peakBox.querySelector("[data-state=not-available]")) {
    replace(peakBox, staticTable(ATTRIBUTION_COLUMNS, attribution.slice(0, 20), "Peak attribution"));
  }
}

export const memoryView: ViewDef = {name: "memory", label: "Memory", needs: ["memory"], shows: ["memory", "memory_peak"],
                                    render: renderMemoryView};
