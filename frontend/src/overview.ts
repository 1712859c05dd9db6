/**
 * The Overview: headline figures, each side's time split (stacked bars), a waterfall from the
 * baseline E2E to the target E2E, hints that point big deltas at the view that explains them,
 * the metric tree (metrics.ts) and the communication rows.
 */
import {type BarRow, type Segment, stackedBars, type Step, waterfall} from "./charts";
import {h} from "./dom";
import {fmtCount, fmtNum, fmtRatio, fmtSigned, higherIsBetter, isNum, MEMORY_UNITS, verdict} from "./format";
import {viewLabel} from "./registry";
import {commTable, isCommRows} from "./comm";
import {metricTable} from "./metrics";
import {autoColumns, staticTable} from "./table";
import type {MetricRow, OverallResponse, Row} from "./types";

export interface OverviewCtx {
  data: OverallResponse;
  perStep: boolean | null;
  stepsDiffer: boolean;
  available: Set<string>;
  onPerStep(v: boolean): void;
  /** Open view `v`; `sort`: the column its table opens sorted by (descending). */
  onView(v: string, sort?: string): void;
}

export const COLORS = {base: "#1a73e8", tgt: "#e8710a"};

/** The segment palette (the timeline colours its classes from it too). */
export const PALETTE = ["#1565c0", "#00897b", "#7b1fa2", "#2e7d32", "#c2185b", "#5d4037", "#3949ab", "#00838f",
                        "#827717", "#ad1457", "#455a64", "#6a1b9a"];
export const FIXED_COLORS = {communication: "#e65100", free: "#6b7075", other: "#9e9e9e"};
const FIXED: Array<[RegExp, string]> = [[/uncovered|communication/i, FIXED_COLORS.communication], [/free/i, FIXED_COLORS.free],
                                        [/rest|other/i, FIXED_COLORS.other]];
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
  views: string[];
  why: string;
  /** The order that explains the hint's row in a linked view (view -> column); else the view's default. */
  sorts?: Partial<Record<string, string>>;
}

const HINTS: HintRule[] = [
  {re: /mem/i, views: ["memory"], why: "memory curves and peak attribution"},
  {re: /communication|wait|transmit|overlapped|group|hccl|nccl|bandwidth|rdma/i, views: ["communication"],
   why: "collectives and their tasks", sorts: {operator: "diff_comm_ms"}},
  {re: /free/i, views: ["api", "operator"], why: "the device idles: look at host-side time"},
  {re: /matmul|conv|flash|attention|vector|cube|mc2|lccl|tensor move|sdma|computing|other/i,
   views: ["operator", "kernel", "module"], why: "which operators and kernels", sorts: {operator: "diff_compute_ms"}},
];

/** The depth-0 ancestor of each row (itself for depth 0). */
function topOf(rows: MetricRow[]): MetricRow[] {
  let top = rows[0];
  return rows.map((r) => (depthOf(r) === 0 ? (top = r) : top));
}

function isAncestor(rows: MetricRow[], a: number, b: number): boolean {   // a above b in the tree
  if (a >= b || depthOf(rows[b]) <= depthOf(rows[a])) return false;
  for (let j = a + 1; j <= b; j++) if (depthOf(rows[j]) <= depthOf(rows[a])) return false;
  return true;
}

/**
 * The biggest differences, each pointing at the view that explains it. A row whose difference
 * is larger than its top-level part's (a group total that is mostly overlapped, transmit inside
 * an uncovered time) does not explain the E2E change and is left out, unless the part's rows add
 * up to it (then moves the other way offset it: a slower Vector inside a faster Computing Time
 * is a regression to show); of a parent and a child
 * with the same difference the child (more specific) is kept, unless the parent is a top-level part.
 * The list leads with the regressions (the target slower), largest first, then the improvements:
 * the six largest moves, with the largest regression always among them.
 */
function hints(rows: MetricRow[], e2e: MetricRow | undefined, ctx: OverviewCtx): HTMLElement | null {
  const scale = e2e ? Math.max(dur(e2e, "baseline"), dur(e2e, "target")) : 0;
  const tops = topOf(rows);
  const abs = (r: MetricRow) => Math.abs(r.diff_ms as number);
  // a top-level part whose first-level rows add up to it (Computing Time = Matmul + Vector + ...): a
  // row moving more than the part is then real, offset by others moving the other way
  const partSums = new Map<MetricRow, number>();
  rows.forEach((r, i) => {
    if (depthOf(r) === 1 && isNum(r.diff_ms)) partSums.set(tops[i], (partSums.get(tops[i]) ?? 0) + r.diff_ms);
  });
  const addsUp = (t: MetricRow) => isNum(t.diff_ms) && partSums.has(t) &&
    Math.abs((partSums.get(t) as number) - t.diff_ms) <= Math.max(Math.abs(t.diff_ms) * 0.02, 0.0005);
  const idx = rows.map((_, i) => i).filter((i) => {
    const r = rows[i];
    if (isE2E(r) || !isNum(r.diff_ms) || abs(r) === 0 || (scale && abs(r) < scale * 0.005)) return false;
    const t = tops[i];
    return !(t !== r && isNum(t?.diff_ms) && isTime(t) && abs(r) > Math.abs(t.diff_ms) * 1.02 + 1e-9 && !addsUp(t));
  }).sort((a, b) => (Math.round(abs(rows[b]) * 1e6) - Math.round(abs(rows[a]) * 1e6)) ||
                    (depthOf(rows[b]) - depthOf(rows[a])));
  const chosen: number[] = [];
  const within = new Map<number, number>();          // a top-level part -> the child that carries its move
  for (const i of idx) {
    const d = abs(rows[i]);
    const sign = Math.sign(rows[i].diff_ms as number);
    // one move seen at two levels: equal within 2%, or the child carries 90% of it the same way ("Free Time" / "Free")
    const same = (j: number) => Math.abs(abs(rows[j]) - d) <= d * 0.02 ||
      (Math.sign(rows[j].diff_ms as number) === sign && Math.min(abs(rows[j]), d) >= 0.9 * Math.max(abs(rows[j]), d));
    // the same move seen at two levels: keep the more specific row, but a top-level part
    // (Uncovered Communication Time) reads better than its single group row
    const k = chosen.findIndex((j) => (isAncestor(rows, i, j) || isAncestor(rows, j, i)) && same(j));
    if (k >= 0) {
      const j = chosen[k];
      if (isAncestor(rows, i, j) && depthOf(rows[i]) === 0) {
        chosen[k] = i;
        within.set(i, j);
      } else if (isAncestor(rows, j, i) && depthOf(rows[j]) === 0) within.set(j, i);
      continue;
    }
    chosen.push(i);
  }
  const worse = (i: number) => verdict(rows[i].diff_ms, "diff", higherIsBetter(rows[i].name)) === "worse";
  const shown = chosen.slice(0, 6);                   // chosen is largest first
  const firstWorse = chosen.find(worse);
  if (firstWorse !== undefined && !shown.includes(firstWorse)) shown[shown.length - 1] = firstWorse;
  // regressions first, then the rest; each part keeps the largest-first order
  const ordered = [...shown.filter(worse), ...shown.filter((i) => !worse(i))];
  const items: HTMLElement[] = ordered.map((i) => {
    const r = rows[i];
    const rule = HINTS.find((x) => x.re.test(r.name));
    const v = verdict(r.diff_ms, "diff", higherIsBetter(r.name));
    const w = within.get(i);
    const part = w !== undefined && Math.abs(abs(rows[w]) - abs(r)) > abs(r) * 0.02
      ? `, of which ${rows[w].name.trim()} ${fmtSigned(rows[w].diff_ms)} ms` : "";
    return hintItem(v, r.name.trim(), `${fmtSigned(r.diff_ms)} ms${isNum(r.ratio) ? ` (${fmtRatio(r.ratio)})` : ""}${part}`,
                    rule, ctx);
  });
  const mem = ctx.data.memory;
  const mb = mem?.baseline?.peak_reserved_gb, mt = mem?.target?.peak_reserved_gb;
  if (isNum(mb) && isNum(mt) && Math.abs(mt - mb) > 0.05 * Math.max(mb, mt)) {
    items.push(hintItem(verdict(mt - mb, "diff"), "Peak reserved memory",
                        `${fmtSigned(mt - mb)} GiB = ${mibText(mt - mb)}${mb > 0 ? ` (${fmtRatio(mt / mb)})` : ""}`, HINTS[0], ctx));
  }
  if (!items.length) return null;
  return h("ul", {class: "hints", "aria-label": "Biggest differences"}, ...items);
}

function hintItem(v: string, name: string, delta: string, rule: HintRule | undefined, ctx: OverviewCtx): HTMLElement {
  const views = (rule?.views ?? []).filter((x) => ctx.available.has(x));
  return h("li", {class: v, "data-metric": name}, h("b", null, name), " ", h("span", {class: v}, delta),
           rule ? h("span", {class: "muted"}, ` — ${rule.why}${views.length ? ": " : ""}`) : null,
           ...views.flatMap((x, i) => [i ? ", " : "", h("button", {class: "linkish", type: "button", "data-view": x,
                                                                   "data-sort": rule?.sorts?.[x] ?? null,
                                                                   onClick: () => ctx.onView(x, rule?.sorts?.[x])},
                                                       `${viewLabel(x)} view`)]));
}

/** One step-level hint of `compare/steps` (`hints`, presenters/steps_json.step_hints). */
export interface StepHint {
  metric: string;
  label: string;
  diff_ms: number;
  ratio?: number | null;
  within_noise?: boolean | null;
  noise: string;
}

/**
 * The step-level hints (the server's, never one within noise): each says per step by how much
 * the phase moved, whether that is beyond step-to-step noise or unknown (one step per side),
 * and links the Steps view. Null when there are none.
 */
export function stepHints(list: StepHint[], available: Set<string>, onView: (v: string) => void): HTMLElement | null {
  const items = list.filter((x) => x && typeof x.metric === "string" && isNum(x.diff_ms) && x.within_noise !== true)
    .map((x) => {
      const v = verdict(x.diff_ms, "diff");
      return h("li", {class: v, "data-metric": x.metric, "data-noise": x.noise},
               h("b", null, x.label), " ",
               h("span", {class: v}, `${fmtSigned(x.diff_ms)} ms per step${isNum(x.ratio) ? ` (${fmtRatio(x.ratio)})` : ""}`),
               h("span", {class: "muted"}, ` — ${x.noise}${available.has("steps") ? ": " : ""}`),
               available.has("steps")
                 ? h("button", {class: "linkish", type: "button", "data-view": "steps", onClick: () => onView("steps")},
                     `${viewLabel("steps")} view`)
                 : null);
    });
  if (!items.length) return null;
  return h("div", null, h("h3", null, "Step by step"),
           h("ul", {class: "hints", "aria-label": "Biggest step-level differences"}, ...items));
}

/** A headline figure: baseline → target, then the signed difference (and `extra`, e.g. the same in MiB). */
export function kpi(name: string, base: unknown, tgt: unknown, unit: string, higherBetter = false, extra = ""): HTMLElement {
  const d = isNum(base) && isNum(tgt) ? tgt - base : null;
  const v = verdict(d, "diff", higherBetter);
  return h("div", {class: "kpi", "data-kpi": name}, h("div", {class: "k"}, name),
           h("div", {class: "v"}, `${fmtNum(base)} → ${fmtNum(tgt)} ${unit}`),
           h("div", {class: v}, d === null ? "\u00a0" : `${fmtSigned(d)} ${unit}`, extra ? ` (${extra})` : "",
             isNum(base) && isNum(tgt) && base > 0 ? ` · ${fmtRatio(tgt / base)}` : ""));
}

/** "+256 MiB" for a difference given in GiB (Mem Usage is reported in GiB = 1024³ bytes). */
function mibText(gbDiff: number | null): string {
  if (gbDiff === null || gbDiff === 0) return "";
  const mib = Math.round(gbDiff * 1024 * 10) / 10;
  return `${Number.isInteger(mib) ? (mib > 0 ? "+" : "−") + fmtCount(Math.abs(mib)) : fmtSigned(mib)} MiB`;
}

function kpis(data: OverallResponse, rows: MetricRow[]): HTMLElement {
  const pick = rows.filter((r) => depthOf(r) === 0 && isTime(r));
  const order = [...pick.filter(isE2E), ...pick.filter((r) => !isE2E(r))].slice(0, 4);
  const out = h("div", {class: "kpis"}, ...order.map((r) => kpi(r.name.trim(), r.baseline?.duration_ms, r.target?.duration_ms, "ms")));
  const mb = data.memory?.baseline?.peak_reserved_gb, mt = data.memory?.target?.peak_reserved_gb;
  if (isNum(mb) || isNum(mt)) {
    const card = kpi("Peak reserved memory", mb, mt, "GiB", false, isNum(mb) && isNum(mt) ? mibText(mt - mb) : "");
    // what the figure measures (it can differ from the Memory view's curve: another component)
    const lab = (s: "baseline" | "target") => data.memory?.[s]?.peak_reserved_label;
    const comp = (s: "baseline" | "target") => data.memory?.[s]?.peak_reserved_component;
    const labels = (["baseline", "target"] as const).map((s) => (typeof lab(s) === "string" ? `${s}: ${lab(s)}` : "")).filter(Boolean);
    card.title = [...labels, MEMORY_UNITS].join("\n");
    const cb = comp("baseline"), ct = comp("target");
    if (typeof cb === "string" || typeof ct === "string") {
      const text = typeof cb === "string" && typeof ct === "string" ? (cb === ct ? `reached by ${cb} on both sides` : `reached by ${cb} → ${ct}`)
        : typeof cb === "string" ? `baseline's reached by ${cb}` : `target's reached by ${ct}`;
      card.append(h("div", {class: "kpi-sub muted", "data-role": "peak-component"}, `Over all components; ${text}`));
    }
    out.append(card);
  }
  for (const [key, label] of [["sdma_gbps", "SDMA bandwidth"], ["rdma_gbps", "RDMA bandwidth"]]) {
    const bb = data.bandwidth?.baseline?.[key], bt = data.bandwidth?.target?.[key];
    if ((isNum(bb) && bb > 0) || (isNum(bt) && bt > 0)) out.append(kpi(label, bb, bt, "GB/s", true));
  }
  return out;
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

/** Notes without repeats: the same sentence prefixed by different sections ("Overview: …", "Communication: …") once. */
export function uniqueNotes(notes: unknown[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const n of notes) {
    if (typeof n !== "string" || !n.trim()) continue;
    const key = n.replace(/^[A-Z][\w ]{0,30}:\s+/, "").trim().toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(n);
  }
  return out;
}

export function renderOverview(ctx: OverviewCtx): HTMLElement {
  const rows = (ctx.data.overall_metrics ?? []).filter((r) => r && typeof r.name === "string");
  const e2e = rows.find(isE2E);
  const out = h("div", {class: "overview"});
  const notes = uniqueNotes(ctx.data.notes ?? []);
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
  // step-level hints: filled by overviewview.ts from compare/steps once it is computed (it costs
  // more than the overview on big traces, so the overview does not wait for it)
  out.append(h("div", {class: "step-hints", "data-state": "pending"}));
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
