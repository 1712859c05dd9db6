/**
 * The Steps view's chart: per step, each side's step-time breakdown as a stacked bar and its
 * phases (iteration gap, forward+backward, tail and the tail's sub-phases) as a band under it,
 * both sides on one ms scale (every bar starts at its step's start). Rows pair the sides' steps
 * by position. Each bar is a button (one tab stop, arrow keys move between bars): it selects
 * its row's steps in the step pickers, or all steps again when that row is already selected.
 */
import {h, s} from "./dom";
import {fmtNum, fmtPct, isNum} from "./format";

export interface StepEntry {
  step: number;
  start_ms?: number;
  duration_ms: number;
  breakdown_ms?: Record<string, number | null>;
  phases_ms?: Record<string, number | null>;
}

/** The breakdown parts in the PyTorch Profiler plugin's order, with their labels and colours. */
export const PARTS: ReadonlyArray<[string, string, string]> = [
  ["kernel", "Kernel", "#3f7fd8"], ["memcpy", "Memcpy", "#26a69a"], ["memset", "Memset", "#8e6cc9"],
  ["communication", "Communication", "#e65100"], ["runtime", "Runtime", "#d81b60"],
  ["dataloader", "DataLoader", "#f2b705"], ["cpu_exec", "CPU Exec", "#7cb342"], ["other", "Other", "#9e9e9e"]];

/** The phases in time order inside a step; the tail is split into its sub-phases when they are given. */
export const PHASE_PARTS: ReadonlyArray<[string, string, string]> = [
  ["iteration_gap", "Iteration gap", "#c9a227"], ["fwd_bwd", "Forward + backward", "#5c6bc0"],
  ["tail", "Tail", "#8d6e63"], ["tail_compute", "Tail: compute", "#00897b"],
  ["tail_communication", "Tail: communication", "#ef6c00"], ["tail_idle", "Tail: idle", "#bcaaa4"]];

const PART_LABEL = new Map(PARTS.map(([k, l]) => [k, l]));
const PHASE_LABEL = new Map(PHASE_PARTS.map(([k, l]) => [k, l]));
const PHASE_COLOR = new Map(PHASE_PARTS.map(([k, , c]) => [k, c]));

export type SideName = "base" | "target";

export interface StepsChartOpts {
  base: StepEntry[];
  target: StepEntry[];
  /** The steps chosen in the pickers (null: all steps). */
  selected: {base: number | null; target: number | null};
  /** A row's bar was activated: select these steps (null, null: all steps again). */
  onSelect(base: number | null, target: number | null): void;
  /** Focus this bar once drawn (after a selection re-draws the view). */
  focus?: {side: SideName; index: number} | null;
}

const num = (v: unknown): number => (isNum(v) && v > 0 ? v : 0);
const SIDE_LABEL: Record<SideName, string> = {base: "Baseline", target: "Target"};

/** The phase segments of one step in time order: gap, forward+backward, then the tail (split when it can be). */
export function phaseSegments(st: StepEntry): Array<[string, number]> {
  const p = st.phases_ms ?? {};
  const out: Array<[string, number]> = [["iteration_gap", num(p.iteration_gap)], ["fwd_bwd", num(p.fwd_bwd)]];
  const tail = num(p.tail), tc = num(p.tail_compute), tm = num(p.tail_communication);
  if ((isNum(p.tail_compute) || isNum(p.tail_communication)) && tc + tm <= tail * 1.0001 + 1e-6) {
    out.push(["tail_compute", tc], ["tail_communication", tm], ["tail_idle", Math.max(0, tail - tc - tm)]);
  } else {
    out.push(["tail", tail]);
  }
  return out;
}

function breakdownSegments(st: StepEntry): Array<[string, string, string, number]> {
  const b = st.breakdown_ms ?? {};
  const known = PARTS.map(([k, l, c]) => [k, l, c, num(b[k])] as [string, string, string, number]);
  for (const [k, v] of Object.entries(b)) {          // a part the server added: shown, in grey
    if (!PART_LABEL.has(k) && num(v) > 0) known.push([k, k.replace(/_/g, " "), "#757575", num(v)]);
  }
  return known;
}

function describe(side: SideName, st: StepEntry): string {
  const parts = breakdownSegments(st).filter(([, , , v]) => v > 0).map(([, l, , v]) => `${l} ${fmtNum(v)}`);
  const phases = phaseSegments(st).filter(([, v]) => v > 0).map(([k, v]) => `${PHASE_LABEL.get(k)} ${fmtNum(v)}`);
  return `${SIDE_LABEL[side]} step ${st.step}: ${fmtNum(st.duration_ms)} ms` +
    (parts.length ? `; breakdown (ms): ${parts.join(", ")}` : "") +
    (phases.length ? `; phases (ms): ${phases.join(", ")}` : "");
}

/** One row label: "Step 3", or both numbers when the sides' step ids differ. */
function rowLabel(b: StepEntry | undefined, t: StepEntry | undefined): string {
  if (b && t) return b.step === t.step ? `Step ${b.step}` : `#${b.step} / #${t.step}`;
  return `Step ${(b ?? t)!.step}`;
}

export function stepsChart(o: StepsChartOpts): HTMLElement {
  const n = Math.max(o.base.length, o.target.length);
  const many = n > 16;
  const W = 960, L = 92, R = 78, T = 20, B = 26;
  const barH = many ? 10 : 16, bandH = many ? 4 : 7, inner = 1, sideGap = many ? 3 : 5, rowGap = many ? 8 : 14;
  const sideH = barH + inner + bandH;
  const rowH = 2 * sideH + sideGap;
  const H = T + n * (rowH + rowGap) - rowGap + B;
  const pw = W - L - R;
  const longest = Math.max(1e-9, ...o.base.map((x) => num(x.duration_ms)), ...o.target.map((x) => num(x.duration_ms)));
  const ticks = niceTicks(longest);
  const max = ticks[ticks.length - 1];
  const sx = (v: number) => (v / max) * pw;
  const svg = s("svg", {class: "chart steps-chart", viewBox: `0 0 ${W} ${H}`, role: "group",
                        "aria-label": "Per-step breakdown and phases, baseline and target, one time axis in ms"});
  const axis = s("g", {class: "axis", "aria-hidden": "true"});
  const digits = Math.max(0, -Math.floor(Math.log10((ticks[1] ?? max) - (ticks[0] ?? 0)) + 1e-9));
  for (const t of ticks) {
    const x = L + sx(t);
    axis.append(s("line", {class: "gridline", x1: x, x2: x, y1: T - 4, y2: H - B + 2}),
                s("text", {x, y: H - 8, "text-anchor": "middle"}, t.toFixed(Math.min(6, digits))));
  }
  axis.append(s("text", {x: L - 8, y: H - 8, "text-anchor": "end"}, "ms"),
              s("text", {x: L, y: T - 8, "text-anchor": "start", class: "muted-text"},
                "each bar starts at its step's start; bar: breakdown, band under it: phases"));
  svg.append(axis);

  const bars: SVGGElement[] = [];
  let unsplit = false;
  const sel = o.selected;
  for (let i = 0; i < n; i++) {
    const b = o.base[i], t = o.target[i];
    const y0 = T + i * (rowH + rowGap);
    const bStep = b?.step ?? null, tStep = t?.step ?? null;
    // a bar is pressed when its side's picker holds its step; the row is marked when one of its bars is
    const on = (bStep !== null && sel.base === bStep) || (tStep !== null && sel.target === tStep);
    const both = sel.base === bStep && sel.target === tStep;
    const row = s("g", {class: "step-row" + (on ? " selected" : ""), "data-row": i});
    row.append(s("rect", {class: "row-bg", x: 2, y: y0 - rowGap / 2 + 1, width: W - 4, height: rowH + rowGap - 2, rx: 4}));
    row.append(s("text", {x: 8, y: y0 + rowH / 2 + 4, class: "row-label", "font-weight": on ? "700" : "500"}, rowLabel(b, t)));
    for (const [side, st, k] of [["base", b, 0], ["target", t, 1]] as Array<[SideName, StepEntry | undefined, number]>) {
      const y = y0 + k * (sideH + sideGap);
      row.append(s("text", {x: L - 8, y: y + barH / 2 + 4, "text-anchor": "end", class: `side-tag ${side}`},
                   side === "base" ? "B" : "T"));
      if (!st) {
        row.append(s("text", {x: L + 4, y: y + barH / 2 + 4, class: "muted-text"}, `no ${SIDE_LABEL[side].toLowerCase()} step here`));
        continue;
      }
      const pressed = sel[side] === st.step;
      const label = describe(side, st) + (both ? ". Selected: activate to compare all steps again"
                                                : ". Activate to compare only this step in every view");
      const g = s("g", {class: `stepbar ${side}`, tabindex: "-1", role: "button", "aria-label": label,
                        "aria-pressed": String(pressed), "data-side": side, "data-step": st.step, "data-index": i});
      const dur = num(st.duration_ms);
      g.append(s("rect", {class: "hit", x: L - 2, y: y - 2, width: Math.max(sx(dur), 2) + 4, height: sideH + 4, rx: 3}));
      let x = L;
      let drawn = 0;
      for (const [, label2, color, v] of breakdownSegments(st)) {
        if (!(v > 0)) continue;
        const w = sx(v);
        g.append(s("rect", {x, y, width: Math.max(w, 0.4), height: barH, fill: color},
                   s("title", null, `${SIDE_LABEL[side]} step ${st.step} · ${label2}: ${fmtNum(v)} ms` +
                     (dur > 0 ? ` (${fmtPct((v / dur) * 100)})` : ""))));
        x += w;
        drawn += v;
      }
      if (drawn < dur * 0.999) {
        unsplit = true;                  // no breakdown (yet): the step's wall time, unsplit
        g.append(s("rect", {x, y, width: Math.max(sx(dur - drawn), 0.4), height: barH, class: "unsplit"},
                   s("title", null, `${SIDE_LABEL[side]} step ${st.step}: ${fmtNum(dur - drawn)} ms not split into parts`)));
      }
      let px = L;
      for (const [key, v] of phaseSegments(st)) {
        if (!(v > 0)) continue;
        const w = sx(v);
        g.append(s("rect", {x: px, y: y + barH + inner, width: Math.max(w, 0.4), height: bandH, fill: PHASE_COLOR.get(key) ?? "#757575"},
                   s("title", null, `${SIDE_LABEL[side]} step ${st.step} · ${PHASE_LABEL.get(key) ?? key}: ${fmtNum(v)} ms` +
                     (dur > 0 ? ` (${fmtPct((v / dur) * 100)})` : ""))));
        px += w;
      }
      g.append(s("title", null, describe(side, st)));
      g.append(s("text", {x: L + sx(dur) + 6, y: y + barH / 2 + 4, class: "bar-total"}, `${fmtNum(dur)} ms`));
      g.addEventListener("click", () => activate(i));
      g.addEventListener("keydown", (ev: KeyboardEvent) => keydown(ev, g));
      bars.push(g);
      row.append(g);
    }
    svg.append(row);
  }

  function activate(i: number): void {
    const b = o.base[i], t = o.target[i];
    const bStep = b?.step ?? null, tStep = t?.step ?? null;
    const already = (sel.base !== null || sel.target !== null) && sel.base === bStep && sel.target === tStep;
    if (already) o.onSelect(null, null);
    else o.onSelect(bStep, tStep);
  }

  function keydown(ev: KeyboardEvent, g: SVGGElement): void {
    const i = bars.indexOf(g);
    const j = ev.key === "ArrowDown" || ev.key === "ArrowRight" ? Math.min(bars.length - 1, i + 1)
      : ev.key === "ArrowUp" || ev.key === "ArrowLeft" ? Math.max(0, i - 1)
      : ev.key === "Home" ? 0 : ev.key === "End" ? bars.length - 1 : -1;
    if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      activate(Number(g.dataset.index));
      return;
    }
    if (j < 0) return;
    ev.preventDefault();
    move(j);
  }

  function move(j: number): void {
    bars.forEach((x, k) => x.setAttribute("tabindex", k === j ? "0" : "-1"));
    bars[j]?.focus();
  }

  // one tab stop: the selected row's bar, else the first
  const start = Math.max(0, bars.findIndex((x) => x.getAttribute("aria-pressed") === "true"));
  bars.forEach((x, k) => x.setAttribute("tabindex", k === start ? "0" : "-1"));
  if (o.focus) {
    const f = bars.find((x) => x.dataset.side === o.focus!.side && Number(x.dataset.index) === o.focus!.index);
    if (f) {
      bars.forEach((x) => x.setAttribute("tabindex", x === f ? "0" : "-1"));
      requestAnimationFrame(() => f.focus());
    }
  }

  // the phases drawn (the tail's sub-phases replace the tail where they are given); the three phases when none is
  const used = new Set<string>();
  for (const st of [...o.base, ...o.target]) for (const [k, v] of phaseSegments(st)) if (v > 0) used.add(k);
  if (!used.size) ["iteration_gap", "fwd_bwd", "tail"].forEach((k) => used.add(k));
  const legend = h("div", {class: "legend", "data-role": "steps-legend"},
    h("span", {class: "muted"}, "Breakdown:"),
    ...PARTS.map(([k, l, c]) => h("span", {"data-part": k}, h("span", {class: "sw", style: {background: c}}), l)),
    unsplit ? h("span", {"data-part": "unsplit"}, h("span", {class: "sw unsplit"}), "Not split into parts") : null,
    h("span", {class: "muted legend-gap"}, "Phases:"),
    ...PHASE_PARTS.filter(([k]) => used.has(k)).map(([k, l, c]) => h("span", {"data-phase": k}, h("span", {class: "sw", style: {background: c}}), l)));
  const box = h("div", {class: "steps-chart-box" + (n > 24 ? " tall" : "")}, svg);
  return h("figure", {class: "steps-figure", style: {margin: "0"}}, box, legend);
}

/** Axis ticks from 0 to a round number at or above `hi`. */
function niceTicks(hi: number): number[] {
  const raw = hi / 6;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const e = raw / mag;
  const step = (e >= 7.5 ? 10 : e >= 3.5 ? 5 : e >= 1.5 ? 2 : 1) * mag;
  const out: number[] = [];
  for (let v = 0; v < hi + step - step * 1e-9; v += step) out.push(+v.toFixed(10));
  if (out.length < 2) out.push(step);
  return out;
}
