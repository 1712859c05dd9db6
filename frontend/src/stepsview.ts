/**
 * The Steps view: fetches `compare/steps` (every step of both sides, whatever step the pickers
 * chose) and shows per step the stacked breakdown bars and phase bands of both sides on one
 * time axis (stepschart.ts), each side's device efficiency as cards, and the step-level
 * metrics with mean ± stdev (n) per side, the difference, the ratio and the noise verdict.
 * Clicking a step's bar selects that step in both step pickers, so every view follows it.
 */
import {fetchReady, Stale, url} from "./api";
import {h, replace} from "./dom";
import {fmtNum, fmtRatio, fmtSigned, isNum, showsZero, verdict} from "./format";
import {uniqueNotes} from "./overview";
import type {ViewCtx, ViewDef} from "./registry";
import {PARTS, PHASE_PARTS, type SideName, type StepEntry, stepsChart} from "./stepschart";
import {failure, pairParams, progressBox} from "./views";

interface Stat {
  mean_ms?: number | null;
  min_ms?: number | null;
  max_ms?: number | null;
  stdev_ms?: number | null;
  n?: number;
}

interface MetricDiff {
  name: string;
  baseline?: Stat;
  target?: Stat;
  diff_ms?: number | null;
  ratio?: number | null;
  within_noise?: boolean | null;
  p_value?: number | null;
}

interface StepsSide {
  steps?: StepEntry[];
  efficiency?: Record<string, unknown>;
  notes?: string[];
}

interface StepsAnswer {
  baseline?: StepsSide;
  target?: StepsSide;
  metrics?: MetricDiff[];
  noise_test?: string;
  top_differences?: string[];
  notes?: string[];
  host_overhead?: {baseline?: HostStep[] | null; target?: HostStep[] | null};
}

/** One step's graph-mode host overhead (ms host) of one side (docs/api.md, compare/steps `host_overhead`). */
interface HostStep {
  step: number;
  graph_runs?: number;
  framework_ms?: number;
  torchair_python_ms?: number;
  torchair_cpp_ms?: number;
  ge_ms?: number;
}

const HOST_PARTS: ReadonlyArray<[keyof HostStep, string]> = [
  ["framework_ms", "Framework"], ["torchair_python_ms", "TorchAir Python"], ["torchair_cpp_ms", "TorchAir C++"], ["ge_ms", "GE"]];

/** Graph mode: per step, each side's three host parts (TorchAir split in its Python and C++ halves), and the difference. */
function hostOverheadTable(ho: StepsAnswer["host_overhead"]): HTMLElement | null {
  const b = Array.isArray(ho?.baseline) ? ho!.baseline! : null;
  const t = Array.isArray(ho?.target) ? ho!.target! : null;
  if (!b && !t) return null;
  const steps = [...new Set([...(b ?? []), ...(t ?? [])].map((r) => r.step))].sort((x, y) => x - y);
  const total = (r: HostStep | undefined) => (r ? HOST_PARTS.reduce((a, [k]) => a + (isNum(r[k]) ? (r[k] as number) : 0), 0) : null);
  const cells = (r: HostStep | undefined) => [...HOST_PARTS.map(([k]) => (r && isNum(r[k]) ? r[k] as number : null)), total(r)];
  const body = h("tbody");
  for (const st of steps) {
    const rb = b?.find((r) => r.step === st), rt = t?.find((r) => r.step === st);
    const vb = cells(rb), vt = cells(rt);
    const label = st < 0 ? "outside steps" : String(st);
    const row = (side: string, vals: (number | null)[], runs: number | undefined, cls: string) =>
      h("tr", {class: cls, "data-step": String(st), "data-side": side},
        h("td", {class: "name"}, side === "baseline" ? label : ""), h("td", null, side === "diff" ? "Diff" : side === "baseline" ? "Baseline" : "Target"),
        ...vals.map((v) => h("td", {class: "num"}, v === null ? "—" : side === "diff" ? fmtSigned(v) : fmtNum(v))),
        h("td", {class: "num"}, runs === undefined ? "" : String(runs)));
    body.append(row("baseline", vb, rb?.graph_runs, "ho-base"), row("target", vt, rt?.graph_runs, "ho-target"));
    if (rb && rt) body.append(row("diff", vb.map((x, i) => (x === null || vt[i] === null ? null : (vt[i] as number) - x)), undefined, "ho-diff"));
  }
  const head = h("tr", null, h("th", {scope: "col"}, "Step"), h("th", {scope: "col"}, "Side"),
                 ...HOST_PARTS.map(([, l]) => h("th", {class: "num", scope: "col"}, `${l} (ms host)`)),
                 h("th", {class: "num", scope: "col"}, "Total (ms host)"), h("th", {class: "num", scope: "col"}, "Graph runs"));
  const who = !b ? "The baseline has no graph-mode events. " : !t ? "The target has no graph-mode events. " : "";
  return h("div", {"data-role": "steps-host-overhead"},
    h("h2", null, "Graph-mode host overhead per step"),
    h("p", {class: "muted intro"}, who, "Host time before each graph runs, summed over the step's graph runs: framework (entering the compiled module to ",
      "npu_fx_compiler inference), TorchAir (its Python input handling, then C++ up to ExecuteGraph) and GE (ExecuteGraph to the graph's end). ",
      "It is host time: the phases above are the device's, and grow with it where the device waits for the host."),
    h("table", {class: "t host-overhead-steps", "aria-label": "Graph-mode host overhead per step"}, h("thead", null, head), body));
}

/** The leaf phases whose differences are ranked (TEAM15 contract): the server's `top_differences` when it sends them. */
const RANKED = ["phases.iteration_gap", "phases.fwd_bwd", "phases.tail_compute", "phases.tail_communication"];

/** Efficiency keys, labels and how a value reads (`ratio`: 0..1 shown as %, `percent`: already %). */
const EFFICIENCY: ReadonlyArray<[string, string, "ratio" | "percent", string]> = [
  ["gpu_utilization", "GPU Utilization", "ratio", "share of the profiled time the GPU ran a kernel"],
  ["sm_efficiency", "SM Efficiency", "ratio", "Est. SM Efficiency: kernel time weighted by the share of SMs busy"],
  ["achieved_occupancy", "Achieved Occupancy", "percent", "Est. Achieved Occupancy, kernel-time weighted"],
  ["tensor_core_ratio", "Tensor-core ratio", "ratio", "share of kernel time in tensor-core (Cube / matrix-core) kernels"],
  ["ai_core_utilization", "AI Core utilization", "ratio", "share of the profiled time the NPU's AI Cores were busy"],
  ["cube_utilization", "Cube utilization", "ratio", "Cube unit utilisation from the PMU columns"],
  ["vector_utilization", "Vector utilization", "ratio", "Vector unit utilisation from the PMU columns"]];
const OPTIONAL_EFF = new Set(["cube_utilization", "vector_utilization"]);

const PHASE_LABEL = new Map(PHASE_PARTS.map(([k, l]) => [k, l]));
const PART_LABEL = new Map(PARTS.map(([k, l]) => [k, l]));

/** A metric's label: "Iteration gap", "Kernel", "Step time". */
export function metricLabel(name: string): string {
  if (name === "step_time") return "Step time";
  const [group, key] = name.includes(".") ? [name.slice(0, name.indexOf(".")), name.slice(name.indexOf(".") + 1)] : ["", name];
  const known = group === "phases" ? PHASE_LABEL.get(key) : group === "breakdown" ? PART_LABEL.get(key) : undefined;
  if (known) return known;
  const t = key.replace(/_/g, " ");
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** The ranked step-level differences: the server's list, else the leaf phases by |diff| without those within noise. */
function topDifferences(data: StepsAnswer, metrics: MetricDiff[]): MetricDiff[] {
  const by = new Map(metrics.map((m) => [m.name, m]));
  if (Array.isArray(data.top_differences)) {
    return data.top_differences.map((n) => by.get(n)).filter((m): m is MetricDiff => !!m);
  }
  return metrics.filter((m) => RANKED.includes(m.name) && m.within_noise !== true && isNum(m.diff_ms) && m.diff_ms !== 0)
    .sort((a, b) => Math.abs(b.diff_ms as number) - Math.abs(a.diff_ms as number));
}

// -- efficiency cards -------------------------------------------------------------------------

const PCT1 = new Intl.NumberFormat("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});

/** An efficiency figure as a percentage with one decimal ("94.7%"). */
function effText(v: unknown, kind: "ratio" | "percent"): string {
  if (!isNum(v)) return "n/a";
  return PCT1.format(kind === "ratio" ? v * 100 : v) + "%";
}

/** Words a note uses for a figure, beyond its key and label. */
const EFF_WORDS: Record<string, string[]> = {
  gpu_utilization: ["gpu utilization", "gpu utilisation"], sm_efficiency: ["sm efficiency", "blocks per sm"],
  achieved_occupancy: ["achieved occupancy", "occupancy"], tensor_core_ratio: ["tensor core", "tensor-core", "matrix core"],
  ai_core_utilization: ["ai core", "ai_core", "aicore"], cube_utilization: ["cube", "aic_mac"], vector_utilization: ["vector", "aiv_vec"]};
/** A note that says why nothing could be computed (it names no figure). */
const GENERAL = /cannot be computed|no device activity|no gpu kernels|no step window|cpu-only/i;

/**
 * Why a side's efficiency figure is missing: its own note (a notes object keyed by figure, or a
 * note naming the figure), else what the side's device says, else a note on why nothing could
 * be computed.
 */
function reasonFor(side: StepsSide | undefined, key: string, label: string, device: string | null): string {
  const eff = side?.efficiency ?? {};
  const own = eff.notes;
  if (own && typeof own === "object" && !Array.isArray(own)) {
    const r = (own as Record<string, unknown>)[key];
    if (typeof r === "string" && r) return r;
  }
  const pool = [...(Array.isArray(own) ? own : []), ...(side?.notes ?? [])].filter((n): n is string => typeof n === "string");
  const words = [key, key.replace(/_/g, " "), label.toLowerCase(), ...(EFF_WORDS[key] ?? [])];
  const hit = pool.find((n) => words.some((w) => n.toLowerCase().includes(w)));
  if (hit) {                                   // "sm_efficiency: why" -> "why"
    const lead = [key, label].find((w) => hit.toLowerCase().startsWith(w.toLowerCase() + ":"));
    return lead ? hit.slice(lead.length + 1).trim() : hit;
  }
  const gpuOnly = key !== "ai_core_utilization" && !OPTIONAL_EFF.has(key);
  if (device === "NPU" && gpuOnly) return "an NPU profile has no GPU kernels";
  if (device && device !== "NPU" && !gpuOnly) return `a ${device} profile has no AI Cores`;
  const general = pool.find((n) => GENERAL.test(n));
  return general ?? "not computed for this profile (no note says why)";
}

function effCard(side: SideName, data: StepsSide | undefined, other: StepsSide | undefined, device: string | null): HTMLElement {
  const eff = data?.efficiency ?? {};
  const rows = EFFICIENCY.filter(([k]) => !OPTIONAL_EFF.has(k) || isNum(eff[k]) || isNum(other?.efficiency?.[k]));
  const shown = new Set<string>();
  const why = (k: string, label: string) => {
    const r = reasonFor(data, k, label, device);
    shown.add(r);
    return r;
  };
  const name = side === "base" ? "Baseline" : "Target";
  return h("section", {class: `eff-card side ${side === "base" ? "baseline" : "target"}`, "data-side": side,
                       "aria-label": `${name} device efficiency`},
    h("div", {class: "side-title"}, h("span", {class: "tag"}, name), device ? h("span", {class: "dev"}, device) : null),
    h("dl", {class: "eff"}, ...rows.flatMap(([k, label, kind, what]) => {
      const v = eff[k];
      const ov = other?.efficiency?.[k];
      let delta: HTMLElement | null = null;
      if (side === "target" && isNum(v) && isNum(ov)) {
        const d = kind === "ratio" ? (v - ov) * 100 : v - ov;
        const t = PCT1.format(d).replace("-", "−");
        const shown = showsZero(t) ? t.replace("−", "") : (d > 0 ? "+" : "") + t;
        delta = h("span", {class: "eff-delta " + (showsZero(t) ? "" : verdict(d, "diff", true)),
                           title: "target minus baseline, in percentage points"}, ` ${shown} pt`);
      }
      const ttp = eff.tensor_core_ratio_ttp;
      return [h("dt", {title: what}, label),
              h("dd", {"data-eff": k, "data-na": String(!isNum(v))},
                isNum(v) ? h("span", {class: "eff-v"}, effText(v, kind)) : h("span", {class: "eff-na"}, "n/a"), delta,
                isNum(v) ? null : h("div", {class: "eff-why muted"}, why(k, label)),
                k === "tensor_core_ratio" && isNum(ttp) && isNum(v) && Math.abs(ttp - v) > 5e-4
                  ? h("div", {class: "eff-why muted", "data-eff-extra": "tensor_core_ratio_ttp"},
                      `${effText(ttp, "ratio")} with the PyTorch Profiler plugin's own kernel list`) : null)];
    })),
    isNum(eff.window_ms) ? h("div", {class: "eff-why muted eff-window"}, `Over ${fmtNum(eff.window_ms)} ms of step windows.`) : null,
    effNotes(eff.notes, shown));
}

/** The efficiency notes not already shown as a missing figure's reason. */
function effNotes(notes: unknown, shown: Set<string>): HTMLElement | null {
  const rest = (Array.isArray(notes) ? notes : []).filter((n): n is string => typeof n === "string" && !!n &&
    ![...shown].some((r) => n === r || n.endsWith(r)));
  return rest.length ? h("ul", {class: "notes eff-notes muted", "data-role": "efficiency-notes"}, ...rest.map((n) => h("li", null, n))) : null;
}

// -- the metrics table ------------------------------------------------------------------------

function statText(st: Stat | undefined): string {
  if (!st || !isNum(st.mean_ms)) return "—";
  const sd = isNum(st.stdev_ms) ? ` ± ${fmtNum(st.stdev_ms)}` : "";
  return `${fmtNum(st.mean_ms)}${sd} (${st.n ?? 0})`;
}

function statTitle(side: string, st: Stat | undefined): string {
  if (!st || !isNum(st.mean_ms)) return `${side}: no steps`;
  return `${side}: mean ${fmtNum(st.mean_ms)} ms over ${st.n} step${st.n === 1 ? "" : "s"}; min ${fmtNum(st.min_ms)}, `
    + `max ${fmtNum(st.max_ms)}` + (isNum(st.stdev_ms) ? `, standard deviation ${fmtNum(st.stdev_ms)} ms` : ", no standard deviation with one step");
}

function noiseCell(m: MetricDiff, test: string): HTMLElement {
  const p = isNum(m.p_value) ? `p = ${m.p_value < 0.001 ? m.p_value.toExponential(1) : fmtNum(m.p_value)}` : "";
  if (m.within_noise === true) {
    return h("td", {class: "noise", "data-noise": "within", title: `Within step-to-step noise${p ? ` (${p})` : ""}${test ? `: ${test}` : ""}`},
             "within noise");
  }
  if (m.within_noise === false) {
    return h("td", {class: "noise beyond", "data-noise": "beyond", title: `Beyond step-to-step noise${p ? ` (${p})` : ""}${test ? `: ${test}` : ""}`},
             "beyond noise");
  }
  const few = Math.min(m.baseline?.n ?? 0, m.target?.n ?? 0) < 2;
  return h("td", {class: "noise muted", "data-noise": "unknown",
                  title: few ? "A side has fewer than two steps: step-to-step noise cannot be told, so no significance is claimed"
                    : "The noise verdict is not available"}, "noise unknown");
}

function groupOf(name: string): string {
  return name === "step_time" ? "" : name.includes(".") ? name.slice(0, name.indexOf(".")) : "";
}

const GROUP_LABEL: Record<string, string> = {phases: "Phases", breakdown: "Breakdown (PyTorch Profiler's priority rule)"};

function metricsTable(metrics: MetricDiff[], ranks: Map<string, number>, test: string): HTMLElement {
  const head = h("thead", null, h("tr", null,
    h("th", {scope: "col"}, "Metric (per step, ms)"), h("th", {scope: "col", class: "num"}, "Baseline mean ± stdev (n)"),
    h("th", {scope: "col", class: "num"}, "Target mean ± stdev (n)"), h("th", {scope: "col", class: "num"}, "Diff (ms)"),
    h("th", {scope: "col", class: "num"}, "Ratio"), h("th", {scope: "col"}, "Noise")));
  const body = h("tbody");
  let group: string | null = null;
  for (const m of metrics) {
    const g = groupOf(m.name);
    if (g !== group && GROUP_LABEL[g]) body.append(h("tr", {class: "grp-row"}, h("th", {colspan: "6", scope: "rowgroup"}, GROUP_LABEL[g])));
    group = g;
    const within = m.within_noise === true;
    const d = m.diff_ms;
    const dt = fmtSigned(d);
    const dcls = within || showsZero(dt) ? "" : verdict(d, "diff");
    const rank = ranks.get(m.name);
    const sub = /^phases\.tail_/.test(m.name);
    body.append(h("tr", {class: ["metric-row", within ? "within-noise" : "", rank ? "ranked" : "", sub ? "sub" : ""].filter(Boolean).join(" "),
                         "data-metric": m.name},
      h("td", {class: "name"}, h("span", {class: "label"}, metricLabel(m.name)),
        rank ? h("span", {class: "badge rank", title: `Step-level difference #${rank} (leaf phases by |diff|, noise excluded)`}, `#${rank}`) : null),
      h("td", {class: "num", title: statTitle("Baseline", m.baseline)}, statText(m.baseline)),
      h("td", {class: "num", title: statTitle("Target", m.target)}, statText(m.target)),
      h("td", {class: "num diff " + dcls}, dt),
      h("td", {class: "num " + (within ? "" : verdict(m.ratio, "ratio"))}, fmtRatio(m.ratio)),
      noiseCell(m, test)));
  }
  return h("div", {class: "tbl-wrap"}, h("table", {class: "t steps-metrics", "aria-label": "Step-level metrics"}, head, body));
}

function topList(top: MetricDiff[], ranks: Map<string, number>): HTMLElement {
  if (!top.length) {
    return h("p", {class: "muted", "data-role": "top-differences"}, "No leaf phase (iteration gap, forward + backward, tail compute, tail communication) differs beyond step-to-step noise.");
  }
  return h("ol", {class: "hints top-diffs", "data-role": "top-differences", "aria-label": "Top step-level differences"},
    ...top.slice(0, 4).map((m) => {
      const d = m.diff_ms ?? 0;
      const noise = m.within_noise === false ? "beyond noise" : m.within_noise === null || m.within_noise === undefined ? "noise unknown" : "within noise";
      ranks.set(m.name, ranks.size + 1);
      return h("li", {class: verdict(d, "diff"), "data-metric": m.name},
        h("b", null, metricLabel(m.name)), `: ${fmtSigned(d)} ms per step (${fmtNum(m.baseline?.mean_ms)} → ${fmtNum(m.target?.mean_ms)} ms`,
        isNum(m.ratio) ? `, ${fmtRatio(m.ratio)}` : "", `), ${noise}`);
    }));
}

// -- the view ---------------------------------------------------------------------------------

/** The bar to focus after a click re-draws the view (the selection moved into the URL). */
let refocus: {side: SideName; index: number} | null = null;

function sideSummary(name: string, st: StepEntry[]): string {
  if (!st.length) return `${name}: no steps`;
  const mean = st.reduce((a, x) => a + (isNum(x.duration_ms) ? x.duration_ms : 0), 0) / st.length;
  return `${name}: ${st.length} step${st.length === 1 ? "" : "s"}, ${fmtNum(mean)} ms each on average`;
}

function noStepsNotice(b: StepEntry[], t: StepEntry[]): HTMLElement | null {
  const why = "(no ProfilerStep#N in the trace, no Ascend step id)";
  const text = !b.length && !t.length ? `Neither side has steps ${why}: there are no per-step bars and no step-level figures.`
    : !b.length ? `The baseline has no steps ${why}: only the target's bars are drawn, and no step-level difference can be computed.`
    : !t.length ? `The target has no steps ${why}: only the baseline's bars are drawn, and no step-level difference can be computed.`
    : null;
  return text ? h("div", {class: "notice na", role: "status", "data-state": "no-steps"}, text) : null;
}

function draw(host: HTMLElement, data: StepsAnswer, ctx: ViewCtx): void {
  const b = Array.isArray(data.baseline?.steps) ? data.baseline!.steps! : [];
  const t = Array.isArray(data.target?.steps) ? data.target!.steps! : [];
  const metrics = Array.isArray(data.metrics) ? data.metrics : [];
  const selected = {base: ctx.base.step, target: ctx.target.step};
  const chosen = selected.base !== null || selected.target !== null;
  const intro = h("p", {class: "muted intro", "data-role": "steps-summary"},
    `${sideSummary("Baseline", b)} · ${sideSummary("Target", t)}. `,
    b.length || t.length ? "Click a step's bar (or press Enter on it) to compare only that step in every view." : "");
  const selLine = chosen ? h("div", {class: "notice steps-selected", role: "status", "data-role": "step-selection"},
    h("b", null, "Every view compares "),
    `baseline ${selected.base === null ? "all steps" : `step ${selected.base}`} with target ${selected.target === null ? "all steps" : `step ${selected.target}`}. `,
    h("button", {class: "btn small", type: "button", "data-role": "all-steps", onClick: () => ctx.onSteps(null, null)}, "Compare all steps")) : null;
  const chart = b.length || t.length ? h("div", {class: "panel", "data-role": "steps-chart"}, stepsChart({
    base: b, target: t, selected, focus: refocus,
    onSelect: (bs, ts) => {
      const el = document.activeElement as HTMLElement | null;
      refocus = el?.dataset?.side ? {side: el.dataset.side as SideName, index: Number(el.dataset.index)} : null;
      ctx.onSteps(bs, ts);
    },
  })) : null;
  refocus = null;
  const dev = (side: "base" | "target") => ctx.worker(side)?.device ?? null;
  const ranks = new Map<string, number>();
  const top = topList(topDifferences(data, metrics), ranks);
  const test = typeof data.noise_test === "string" ? data.noise_test : "";
  const notes = uniqueNotes(Array.isArray(data.notes) ? data.notes
    : [...(data.baseline?.notes ?? []).map((n) => `baseline: ${n}`), ...(data.target?.notes ?? []).map((n) => `target: ${n}`)])
    .filter((n) => !(test && /^within_noise:/.test(n)));        // said under the table already
  replace(host,
    h("h2", {style: {marginTop: "0"}}, "Steps"), intro, selLine, noStepsNotice(b, t), chart,
    h("h2", null, "Device efficiency"),
    h("div", {class: "grid2 eff-cards", "data-role": "efficiency"},
      effCard("base", data.baseline, data.target, dev("base")), effCard("target", data.target, data.baseline, dev("target"))),
    h("h2", null, "Step-level metrics"),
    metrics.length ? h("div", null, h("h3", null, "Top step-level differences"), top,
                       metricsTable(metrics, ranks, test),
                       test ? h("p", {class: "muted intro noise-test", "data-role": "noise-test"}, `Noise: ${test}`) : null)
      : h("div", {class: "notice na", "data-state": "empty"}, "No step-level metrics: a side has no steps."),
    hostOverheadTable(data.host_overhead),
    notes.length ? h("div", {class: "notice warn", role: "note", "data-role": "steps-notes"},
                     h("ul", {class: "notes"}, ...notes.map((n) => h("li", null, n)))) : null);
}

async function render(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  replace(host, progressBox("Comparing the steps", null));
  // every step of both sides, whatever the pickers chose: the chosen step is marked, not filtered
  const u = url("compare/steps", pairParams({worker: ctx.base.worker, step: null}, {worker: ctx.target.worker, step: null}, ctx.compat));
  try {
    const data = await fetchReady<StepsAnswer>(u, ctx.alive, (l) => {
      if (ctx.alive()) replace(host, progressBox("Comparing the steps", l));
    });
    if (!ctx.alive()) return;
    if (!data || typeof data !== "object") {
      replace(host, failure("The step comparison", new Error("unexpected answer from the server")));
      return;
    }
    draw(host, data, ctx);
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure("The step comparison", e));
  }
}

export const stepsView: ViewDef = {name: "steps", label: "Steps", render};
