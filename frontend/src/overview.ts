/**
 * The Overview: headline figures, each side's time split (stacked bars), a waterfall from the
 * baseline E2E to the target E2E, hints that point big deltas at the view that explains them,
 * the metric tree (expand/collapse, kernels on demand) and the communication rows.
 */
import {type BarRow, type Segment, stackedBars, type Step, waterfall} from "./charts";
import {h, replace} from "./dom";
import {fmtCount, fmtNum, fmtRatio, fmtSigned, higherIsBetter, isNum, verdict} from "./format";
import type {ViewName} from "./state";
import {commTable, isCommRows} from "./comm";
import {autoColumns, staticTable} from "./table";
import type {Kernel, MetricRow, OverallResponse, Row} from "./types";

export interface OverviewCtx {
  data: OverallResponse;
  perStep: boolean | null;
  stepsDiffer: boolean;
  available: Set<ViewName>;
  onPerStep(v: boolean): void;
  onView(v: ViewName): void;
}

export const COLORS = {base: "#1a73e8", tgt: "#e8710a"};

const PALETTE = ["#1565c0", "#00897b", "#7b1fa2", "#2e7d32", "#c2185b", "#5d4037", "#3949ab", "#00838f",
                 "#827717", "#ad1457", "#455a64", "#6a1b9a"];
const FIXED: Array<[RegExp, string]> = [[/uncovered|communication/i, "#e65100"], [/free/i, "#6b7075"],
                                        [/rest|other/i, "#9e9e9e"]];
const assigned = new Map<string, string>();

/** A stable colour per segment name: fixed ones for communication/free, else the next palette entry. */
function segColor(name: string): string {
  const key = name.trim();
  for (const [re, c] of FIXED) if (re.test(key)) return c;
  let c = assigned.get(key);
  if (!c) {
    c = PALETTE[assigned.size % PALETTE.length];
    assigned.set(key, c);
  }
  return c;
}

const dur = (r: MetricRow | undefined, side: "baseline" | "target") => {
  const v = r?.[side]?.duration_ms;
  return isNum(v) ? v : 0;
};
const depthOf = (r: MetricRow) => (isNum(r.depth) ? r.depth : 0);
const isTime = (r: MetricRow) => (!r.unit || r.unit === "ms") && !/mem usage|bandwidth/i.test(r.name);
const isE2E = (r: MetricRow) => /^e2e/i.test(r.name.trim());

/** Direct children of row i (rows right below it with depth exactly one more). */
function childrenOf(rows: MetricRow[], i: number): MetricRow[] {
  const d = depthOf(rows[i]);
  const out: MetricRow[] = [];
  for (let j = i + 1; j < rows.length && depthOf(rows[j]) > d; j++) if (depthOf(rows[j]) === d + 1) out.push(rows[j]);
  return out;
}

function timeParts(rows: MetricRow[]): Array<{row: MetricRow; kids: MetricRow[]}> {
  const out: Array<{row: MetricRow; kids: MetricRow[]}> = [];
  rows.forEach((r, i) => {
    if (depthOf(r) !== 0 || isE2E(r) || !isTime(r)) return;
    out.push({row: r, kids: /^computing/i.test(r.name.trim()) ? childrenOf(rows, i).filter(isTime) : []});
  });
  return out;
}

function splitBars(rows: MetricRow[], e2e: MetricRow | undefined): BarRow[] {
  const parts = timeParts(rows);
  return (["baseline", "target"] as const).map((side) => {
    const segs: Segment[] = [];
    for (const {row, kids} of parts) {
      const total = dur(row, side);
      const ksum = kids.reduce((a, k) => a + dur(k, side), 0);
      if (kids.length && ksum > 0) {
        const scale = ksum > total && total > 0 ? total / ksum : 1;
        for (const k of kids) segs.push({name: k.name.trim(), value: dur(k, side) * scale, color: segColor(k.name)});
        if (total - ksum * scale > total * 1e-3) {
          segs.push({name: `${row.name.trim()} (rest)`, value: total - ksum * scale, color: "#5f6368"});
        }
      } else segs.push({name: row.name.trim(), value: total, color: segColor(row.name)});
    }
    const sum = segs.reduce((a, x) => a + x.value, 0);
    const e = e2e ? dur(e2e, side) : sum;
    if (e - sum > e * 1e-3) segs.push({name: "Unaccounted", value: e - sum, color: "#bdc1c6"});
    return {label: side === "baseline" ? "Baseline" : "Target", color: side === "baseline" ? "#1558b0" : "#a14f00",
            total: Math.max(e, 0), segments: segs};
  });
}

function waterfallSteps(rows: MetricRow[], e2e: MetricRow): Step[] {
  const steps: Step[] = [];
  for (const {row, kids} of timeParts(rows)) {
    const d = dur(row, "target") - dur(row, "baseline");
    if (kids.length) {
      let ks = 0;
      for (const k of kids) {
        const kd = dur(k, "target") - dur(k, "baseline");
        ks += kd;
        steps.push({label: k.name.trim(), value: kd});
      }
      if (Math.abs(d - ks) > 1e-6) steps.push({label: `${row.name.trim()}: overlap / rest`, value: d - ks});
    } else steps.push({label: row.name.trim(), value: d});
  }
  const total = dur(e2e, "target") - dur(e2e, "baseline");
  const rest = total - steps.reduce((a, x) => a + x.value, 0);
  if (Math.abs(rest) > 1e-6) steps.push({label: "Other (not in the parts above)", value: rest});
  const scale = Math.max(dur(e2e, "baseline"), dur(e2e, "target"));
  const big = steps.filter((x) => Math.abs(x.value) >= scale * 0.002);
  const small = steps.filter((x) => Math.abs(x.value) < scale * 0.002 && x.value !== 0);
  if (small.length) big.push({label: `${small.length} smaller item${small.length > 1 ? "s" : ""}`,
                              value: small.reduce((a, x) => a + x.value, 0)});
  return big;
}

interface HintRule {
  re: RegExp;
  views: ViewName[];
  why: string;
}

const HINTS: HintRule[] = [
  {re: /mem/i, views: ["memory"], why: "memory curves and peak attribution"},
  {re: /communication|wait|transmit|overlapped|group|hccl|nccl|bandwidth|rdma/i, views: ["communication"],
   why: "collectives and their tasks"},
  {re: /free/i, views: ["api", "operator"], why: "the device idles: look at host-side time"},
  {re: /matmul|conv|flash|attention|vector|cube|mc2|lccl|tensor move|sdma|computing|other/i,
   views: ["operator", "kernel", "module"], why: "which operators and kernels"},
];

const VIEW_LABEL: Record<ViewName, string> = {overview: "Overview", operator: "Operator", module: "Module",
  kernel: "Kernel", api: "API", communication: "Communication", memory: "Memory"};
export {VIEW_LABEL};

function hints(rows: MetricRow[], e2e: MetricRow | undefined, ctx: OverviewCtx): HTMLElement | null {
  const scale = e2e ? Math.max(dur(e2e, "baseline"), dur(e2e, "target")) : 0;
  const sorted = rows.filter((r) => !isE2E(r) && isNum(r.diff_ms) && Math.abs(r.diff_ms) > 0 &&
                                    (!scale || Math.abs(r.diff_ms) >= scale * 0.01))
    .sort((a, b) => Math.abs(b.diff_ms as number) - Math.abs(a.diff_ms as number));
  const cands: MetricRow[] = [];
  for (const r of sorted) {            // a parent and its only moving child say the same thing: keep one
    const d = r.diff_ms as number;
    if (cands.some((c) => Math.abs((c.diff_ms as number) - d) <= Math.abs(d) * 0.02)) continue;
    const rule = HINTS.find((x) => x.re.test(r.name));
    if (rule && cands.filter((c) => HINTS.find((x) => x.re.test(c.name)) === rule).length >= 2) continue;
    cands.push(r);
    if (cands.length >= 5) break;
  }
  const items: HTMLElement[] = cands.map((r) => {
    const rule = HINTS.find((x) => x.re.test(r.name));
    const v = verdict(r.diff_ms, "diff", higherIsBetter(r.name));
    return hintItem(v, r.name.trim(), `${fmtSigned(r.diff_ms)} ms${isNum(r.ratio) ? ` (${fmtRatio(r.ratio)})` : ""}`,
                    rule, ctx);
  });
  const mem = ctx.data.memory;
  const mb = mem?.baseline?.peak_reserved_gb, mt = mem?.target?.peak_reserved_gb;
  if (isNum(mb) && isNum(mt) && Math.abs(mt - mb) > 0.05 * Math.max(mb, mt)) {
    items.push(hintItem(verdict(mt - mb, "diff"), "Peak reserved memory",
                        `${fmtSigned(mt - mb)} GB${mb > 0 ? ` (${fmtRatio(mt / mb)})` : ""}`, HINTS[0], ctx));
  }
  if (!items.length) return null;
  return h("ul", {class: "hints", "aria-label": "Biggest differences"}, ...items);
}

function hintItem(v: string, name: string, delta: string, rule: HintRule | undefined, ctx: OverviewCtx): HTMLElement {
  const views = (rule?.views ?? []).filter((x) => ctx.available.has(x));
  return h("li", {class: v}, h("b", null, name), " ", h("span", {class: v}, delta),
           rule ? h("span", {class: "muted"}, ` — ${rule.why}${views.length ? ": " : ""}`) : null,
           ...views.flatMap((x, i) => [i ? ", " : "", h("button", {class: "linkish", type: "button", "data-view": x,
                                                                   onClick: () => ctx.onView(x)}, `${VIEW_LABEL[x]} view`)]));
}

function kpi(name: string, base: unknown, tgt: unknown, unit: string, higherBetter = false): HTMLElement {
  const d = isNum(base) && isNum(tgt) ? tgt - base : null;
  const v = verdict(d, "diff", higherBetter);
  return h("div", {class: "kpi"}, h("div", {class: "k"}, name),
           h("div", {class: "v"}, `${fmtNum(base)} → ${fmtNum(tgt)} ${unit}`),
           h("div", {class: v}, d === null ? "\u00a0" : `${fmtSigned(d)} ${unit}`,
             isNum(base) && isNum(tgt) && base > 0 ? ` · ${fmtRatio(tgt / base)}` : ""));
}

function kpis(data: OverallResponse, rows: MetricRow[]): HTMLElement {
  const pick = rows.filter((r) => depthOf(r) === 0 && isTime(r));
  const order = [...pick.filter(isE2E), ...pick.filter((r) => !isE2E(r))].slice(0, 4);
  const out = h("div", {class: "kpis"}, ...order.map((r) => kpi(r.name.trim(), r.baseline?.duration_ms, r.target?.duration_ms, "ms")));
  const mb = data.memory?.baseline?.peak_reserved_gb, mt = data.memory?.target?.peak_reserved_gb;
  if (isNum(mb) || isNum(mt)) out.append(kpi("Peak reserved memory", mb, mt, "GB"));
  for (const [key, label] of [["sdma_gbps", "SDMA bandwidth"], ["rdma_gbps", "RDMA bandwidth"]]) {
    const bb = data.bandwidth?.baseline?.[key], bt = data.bandwidth?.target?.[key];
    if ((isNum(bb) && bb > 0) || (isNum(bt) && bt > 0)) out.append(kpi(label, bb, bt, "GB/s", true));
  }
  return out;
}

/** Kernel names can be whole C++ signatures: drop "void " and the trailing argument list. */
export function shortKernel(name: string): string {
  let t = name.replace(/^void\s+/, "");
  if (t.endsWith(")")) {
    let depth = 0;
    for (let i = t.length - 1; i > 0; i--) {
      if (t[i] === ")") depth++;
      else if (t[i] === "(" && --depth === 0) {
        t = t.slice(0, i);
        break;
      }
    }
  }
  return t.length > 140 ? t.slice(0, 139) + "…" : t;
}

function kernelLists(r: MetricRow): {baseline: Kernel[]; target: Kernel[]; flat: Kernel[]} {
  const k = r.kernels;
  if (!k) return {baseline: [], target: [], flat: []};
  if (Array.isArray(k)) {
    const b = k.filter((x) => x.side === "baseline"), t = k.filter((x) => x.side === "target");
    return b.length || t.length ? {baseline: b, target: t, flat: []} : {baseline: [], target: [], flat: k};
  }
  return {baseline: k.baseline ?? [], target: k.target ?? [], flat: []};
}

function kernelTable(title: string, ks: Kernel[]): HTMLElement {
  const body = h("tbody", null, ...ks.map((k) => h("tr", null,
    h("td", {class: "name", title: k.name}, shortKernel(k.name)), h("td", {class: "num"}, fmtNum(k.duration_ms)),
    h("td", {class: "num"}, fmtCount(k.count)))));
  if (!ks.length) body.append(h("tr", null, h("td", {colspan: "3", class: "muted"}, "none")));
  return h("div", null, h("h3", null, title), h("table", {class: "t", "aria-label": title},
    h("thead", null, h("tr", null, h("th", {scope: "col"}, "Kernel"), h("th", {scope: "col", class: "num"}, "Duration (ms)"),
                       h("th", {scope: "col", class: "num"}, "Count"))), body));
}

function unitOf(r: MetricRow): string {
  return r.unit && r.unit !== "ms" ? ` ${r.unit}` : "";
}

/** The metric tree: indentation by depth, collapsible parents, kernels on demand. */
export function metricTable(rows: MetricRow[], label: string): HTMLElement {
  const collapsed = new Set<number>();
  const open = new Set<number>();
  const wrap = h("div", {class: "tbl-wrap"});
  const hasKids = (i: number) => i + 1 < rows.length && depthOf(rows[i + 1]) > depthOf(rows[i]);
  const kcount = (r: MetricRow) => {
    const k = kernelLists(r);
    return k.flat.length + k.baseline.length + k.target.length;
  };
  const anyKernels = rows.some((r) => kcount(r) > 0);
  function draw(): void {
    const body = h("tbody");
    let hideBelow = Infinity;
    rows.forEach((r, i) => {
      const d = depthOf(r);
      if (d <= hideBelow) hideBelow = Infinity;
      if (hideBelow !== Infinity) return;
      if (collapsed.has(i)) hideBelow = d;
      const hib = higherIsBetter(r.name);
      const vd = verdict(r.diff_ms, "diff", hib), vr = verdict(r.ratio, "ratio", hib);
      const u = unitOf(r);
      const name = h("td", {class: "name", style: {paddingLeft: `${8 + d * 18}px`}});
      if (hasKids(i)) {
        const isOpen = !collapsed.has(i);
        name.append(h("button", {class: "tog", type: "button", "aria-expanded": String(isOpen),
                                 "aria-label": `${isOpen ? "Collapse" : "Expand"} ${r.name.trim()}`,
                                 onClick: () => { if (isOpen) collapsed.add(i); else collapsed.delete(i); draw(); }},
                           isOpen ? "▾" : "▸"));
      } else name.append(h("span", {class: "tog", "aria-hidden": "true"}));
      name.append(h("span", {class: "label"}, r.name.trim()));
      const n = kcount(r);
      let kcell: HTMLElement | null = null;
      if (anyKernels) {
        kcell = h("td");
        if (n) {
          const ks = kernelLists(r);
          const top = [...ks.flat, ...ks.baseline, ...ks.target].slice(0, 12)
            .map((k) => `${k.side ? k.side + ": " : ""}${shortKernel(k.name)} — ${fmtNum(k.duration_ms)} ms × ${fmtCount(k.count)}`).join("\n");
          const isOpen = open.has(i);
          kcell.append(h("button", {class: "btn small", type: "button", title: top, "aria-expanded": String(isOpen),
                                    onClick: () => { if (isOpen) open.delete(i); else open.add(i); draw(); }},
                             `${isOpen ? "Hide" : "Kernels"} (${n})`));
        }
      }
      body.append(h("tr", {class: d === 0 ? "row-top" : ""}, name,
        h("td", {class: "num"}, fmtNum(r.baseline?.duration_ms) + u), h("td", {class: "num"}, fmtCount(r.baseline?.count)),
        h("td", {class: "num"}, fmtNum(r.target?.duration_ms) + u), h("td", {class: "num"}, fmtCount(r.target?.count)),
        h("td", {class: `num ${vd}`}, fmtSigned(r.diff_ms) + u, vd ? h("span", {"aria-hidden": "true"}, vd === "worse" ? " ▲" : " ▼") : ""),
        h("td", {class: `num ${vr}`}, fmtRatio(r.ratio)), kcell));
      if (open.has(i) && n) {
        const ks = kernelLists(r);
        const inner = ks.flat.length ? kernelTable(`Kernels in ${r.name.trim()}`, ks.flat)
          : h("div", {class: "kern"}, kernelTable("Baseline kernels", ks.baseline), kernelTable("Target kernels", ks.target));
        body.append(h("tr", {class: "detail"}, h("td", {colspan: "8"}, inner)));
      }
    });
    replace(wrap, h("table", {class: "t metrics", "aria-label": label},
      h("thead", null, h("tr", null, h("th", {scope: "col"}, "Metric"),
        h("th", {class: "num", scope: "col"}, "Baseline (ms)"), h("th", {class: "num", scope: "col"}, "Count"),
        h("th", {class: "num", scope: "col"}, "Target (ms)"), h("th", {class: "num", scope: "col"}, "Count"),
        h("th", {class: "num", scope: "col"}, "Diff (ms)"), h("th", {class: "num", scope: "col"}, "Ratio"),
        anyKernels ? h("th", {scope: "col"}, "Kernels") : null)), body));
  }
  draw();
  return wrap;
}

function communication(data: OverallResponse["communication"]): HTMLElement | null {
  if (!data) return null;
  if (isCommRows(data)) return commTable(data);
  if (Array.isArray(data)) {
    if (!data.length) return null;
    const first = data[0] as Row;
    if (typeof first.name === "string" && first.baseline && typeof first.baseline === "object") {
      return metricTable(data as MetricRow[], "Communication");
    }
    return staticTable(autoColumns(data as Row[]), data as Row[], "Communication");
  }
  if (Array.isArray(data.rows)) {
    return staticTable(Array.isArray(data.columns) ? data.columns : autoColumns(data.rows), data.rows, "Communication");
  }
  return null;
}

export function renderOverview(ctx: OverviewCtx): HTMLElement {
  const rows = (ctx.data.overall_metrics ?? []).filter((r) => r && typeof r.name === "string");
  const e2e = rows.find(isE2E);
  const out = h("div", {class: "overview"});
  const notes = ctx.data.notes ?? [];
  const sc = ctx.data.steps_count;
  const differ = sc && isNum(sc.baseline) && isNum(sc.target) ? sc.baseline !== sc.target : ctx.stepsDiffer;
  const offerPerStep = ctx.data.per_step_available ?? (differ || ctx.data.per_step === true);
  if (notes.length || offerPerStep) {
    const box = h("div", {class: "notice warn", role: "note"});
    if (notes.length) box.append(h("ul", {class: "notes"}, ...notes.map((n) => h("li", null, n))));
    if (offerPerStep) {
      const cb = h("input", {type: "checkbox", checked: ctx.data.per_step ?? ctx.perStep ?? false}) as HTMLInputElement;
      cb.addEventListener("change", () => ctx.onPerStep(cb.checked));
      box.append(h("label", null, cb, " Per-step figures (each side's totals divided by its number of steps)"));
    }
    out.append(box);
  }
  if (!rows.length) {
    out.append(h("div", {class: "notice na"}, "The comparison returned no metrics for this pair."));
    return out;
  }
  out.append(kpis(ctx.data, rows));
  const hint = hints(rows, e2e, ctx);
  if (hint) out.append(h("h2", null, "Where the difference comes from"), hint);
  const charts = h("div", {class: "grid2"});
  charts.append(h("div", {class: "panel"}, h("h3", null, "Time split per side (ms)"),
                  stackedBars(splitBars(rows, e2e), "ms", "Time split of baseline and target")));
  if (e2e) {
    charts.append(h("div", {class: "panel"}, h("h3", null, "E2E difference, part by part (ms)"),
                    waterfall({label: "Baseline E2E", value: dur(e2e, "baseline")}, waterfallSteps(rows, e2e),
                              {label: "Target E2E", value: dur(e2e, "target")}, "ms", COLORS,
                              "Waterfall from the baseline E2E time to the target E2E time")));
  }
  out.append(charts);
  out.append(h("h2", null, "Metrics"), metricTable(rows, "Overall metrics"));
  const comm = communication(ctx.data.communication);
  if (comm) out.append(h("h2", null, "Communication"), comm);
  return out;
}
