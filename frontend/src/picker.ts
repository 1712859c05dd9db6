/**
 * The run picker: baseline and target, each a (run, worker, step) choice, suggested pairs as
 * one-click chips (the first few, the rest behind "more"), a swap button, and per-worker status
 * in place (parse progress, errors). Long run and worker lists get a type-to-filter box.
 */
import {h, replace} from "./dom";
import {filterPick, type PickOption} from "./filterpick";
import {fmtCount, fmtNum} from "./format";
import {runOf, type SideSel, type State} from "./state";
import type {Pair, Run, RunsResponse, Worker} from "./types";

export type SideKey = "base" | "target";

export interface PickerHandlers {
  onSide(side: SideKey, sel: SideSel | null): void;
  onSwap(): void;
  onPair(base: SideSel, target: SideSel): void;
}

const LABEL: Record<SideKey, string> = {base: "Baseline", target: "Target"};

export function findWorker(runs: RunsResponse | null, id: string | undefined | null): Worker | null {
  if (!runs || !id) return null;
  for (const r of runs.runs) for (const w of r.workers) if (w.id === id) return w;
  return null;
}

export function runDevices(r: Run): string {
  const d = [...new Set(r.workers.map((w) => w.device).filter(Boolean))];
  return d.join("/") || "?";
}

const selectable = (w: Worker) => w.status !== "error";

/** The two sides a suggested pair opens (its named workers, else each run's first readable one). */
export function pairSides(runs: RunsResponse | null, p: Pair): [SideSel, SideSel] | null {
  const pick = (runName: string, wid: string | null | undefined): SideSel | null => {
    const r = runs?.runs.find((x) => x.name === runName);
    const w = r?.workers.find((x) => x.id === wid && selectable(x)) ?? r?.workers.find(selectable);
    return w ? {worker: w.id, step: null} : null;
  };
  const b = pick(p.baseline, p.baseline_worker), t = pick(p.target, p.target_worker);
  return b && t ? [b, t] : null;
}

function workerText(w: Worker): string {
  const bits = [w.name];
  if (w.rank !== null && w.rank !== undefined && !w.name.includes(String(w.rank))) bits.push(`rank ${w.rank}`);
  if (w.device) bits.push(w.device);
  let t = bits.join(" · ");
  if (w.status === "error") t = `⚠ ${t} — unreadable`;
  return t;
}


/** A select says its chosen option's full text on hover. */
function titleFollows(sel: HTMLSelectElement): void {
  const sync = () => { sel.title = sel.selectedOptions[0]?.title || sel.selectedOptions[0]?.text || ""; };
  sync();
  sel.addEventListener("change", sync);
}

const RUN_CHARS = 64, WORKER_CHARS = 44;

function sizeText(n: number | undefined): string {
  if (!n) return "";
  return n > 1048576 ? `${fmtNum(n / 1048576)} MiB` : `${fmtNum(n / 1024)} KiB`;
}

export function statusLine(w: Worker | null): HTMLElement {
  if (!w) return h("div", {class: "side-status muted"}, "Choose a run.");
  const facts = [w.device, w.framework, w.format, w.steps?.length ? `${w.steps.length} step${w.steps.length > 1 ? "s" : ""}` : "",
                 sizeText(w.size_bytes)].filter(Boolean).join(" · ");
  const out = h("div", {class: "side-status"});
  if (w.status === "error") {
    out.append(h("div", {class: "err-text", role: "alert"}, `Cannot read this worker: ${w.error || "unknown error"}`));
  } else if (w.status === "loading" || w.status === "not_loaded") {
    const p = typeof w.progress === "number" ? w.progress : 0;
    out.append(h("div", {class: "muted"}, w.status === "loading" ? `Parsing… ${Math.round(p * 100)}%` : "Not parsed yet",
                 facts ? ` · ${facts}` : ""),
               h("div", {class: "progress" + (p > 0 ? "" : " indet"), role: "progressbar", "aria-valuemin": "0",
                         "aria-valuemax": "100", "aria-valuenow": String(Math.round(p * 100))},
                 h("div", {style: {width: `${Math.round(p * 100)}%`}})));
  } else {
    out.append(h("span", {class: "muted"}, facts));
  }
  if (w.warnings?.length) {
    out.append(h("details", null, h("summary", null, `⚠ ${w.warnings.length} warning${w.warnings.length > 1 ? "s" : ""}`),
                 h("ul", null, ...w.warnings.map((x) => h("li", null, x)))));
  }
  return out;
}

/** A select under its filter box (long lists), or the select alone. */
function withBox(sel: HTMLSelectElement, box: HTMLInputElement | null, count: HTMLElement | null): HTMLElement {
  return box ? h("div", {class: "pick"}, h("div", {class: "pick-row"}, box, count), sel) : sel;
}

/** Suggestion chips shown at once; the rest open under "more". */
const CHIPS_SHOWN = 6;

export class Picker {
  readonly el: HTMLElement;
  private cards: Record<SideKey, HTMLElement>;
  private suggest = h("div", {class: "suggest"});
  private pendingRun: Record<SideKey, string | null> = {base: null, target: null};
  private query: Record<string, string> = {};        // the filter boxes' text, by data-role
  private sig = "";
  private runs: RunsResponse | null = null;

  constructor(private handlers: PickerHandlers, actions: HTMLElement) {
    this.cards = {base: h("section", {class: "side baseline", "aria-label": "Baseline"}),
                  target: h("section", {class: "side target", "aria-label": "Target"})};
    const swap = h("button", {class: "btn swap", type: "button", title: "Swap baseline and target",
                              "aria-label": "Swap baseline and target", onClick: () => handlers.onSwap()}, "⇄ Swap");
    this.el = h("div", {class: "picker"},
                h("div", {class: "pc-top"}, this.cards.base, swap, this.cards.target),
                h("div", {class: "pc-row"}, this.suggest, actions));
  }

  update(runs: RunsResponse | null, st: State): void {
    this.runs = runs;
    const sig = JSON.stringify([runs?.runs.map((r) => [r.name, r.workers.map((w) => [w.id, w.status === "error", w.steps])]),
                                runs?.pairs, st.base, st.target, this.pendingRun]);
    if (sig !== this.sig) {
      this.sig = sig;
      const focused = (document.activeElement as HTMLElement | null)?.dataset?.role;
      this.drawSide("base", st.base);
      this.drawSide("target", st.target);
      this.drawSuggestions(st);
      if (focused) (this.el.querySelector(`[data-role="${focused}"]`) as HTMLElement | null)?.focus();
    } else {
      for (const side of ["base", "target"] as SideKey[]) {
        const sel = side === "base" ? st.base : st.target;
        const old = this.cards[side].querySelector(".side-status");
        if (old) old.replaceWith(statusLine(findWorker(runs, sel?.worker) ?? null));
      }
    }
  }

  private drawSide(side: SideKey, sel: SideSel | null): void {
    const runs = this.runs?.runs ?? [];
    const w = findWorker(this.runs, sel?.worker);
    const runName = sel ? runOf(sel.worker) : this.pendingRun[side];
    const run = runs.find((r) => r.name === runName) ?? null;
    const role = (n: string) => `${side}-${n}`;

    const runSel = h("select", {"data-role": role("run"), "aria-label": `${LABEL[side]} run`}) as HTMLSelectElement;
    const runOpts: PickOption[] = runs.map((r) => {
      const bad = r.workers.length > 0 && r.workers.every((x) => !selectable(x));
      return {value: r.name, full: `${r.name} · ${runDevices(r)}${bad ? " · unreadable" : ""}`};
    });
    const chooseRun = (name: string) => {
      const r = runs.find((x) => x.name === name);
      const ok = r?.workers.find(selectable);
      this.pendingRun[side] = r ? r.name : null;
      this.handlers.onSide(side, ok ? {worker: ok.id, step: null} : null);
    };
    const runPick = filterPick(runSel, runOpts, runName ?? "", RUN_CHARS, "runs",
                               runs.length ? "— choose a run —" : "no runs found",
                               sel && !run ? [{value: runName ?? "", full: `${runName} (missing)`}] : [],
                               this.query[role("run-filter")] ?? "", (q) => { this.query[role("run-filter")] = q; },
                               role("run-filter"));
    runPick.refill();
    titleFollows(runSel);
    runSel.addEventListener("change", () => chooseRun(runSel.value));
    runPick.box?.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      ev.preventDefault();
      const o = runPick.first();
      if (o) chooseRun(o.value);
    });

    const wSel = h("select", {"data-role": role("worker"), "aria-label": `${LABEL[side]} worker`,
                              disabled: !run}) as HTMLSelectElement;
    const wOpts: PickOption[] = (run?.workers ?? []).map((x) => ({value: x.id, full: workerText(x),
                                                                  disabled: !selectable(x) && x.id !== sel?.worker}));
    const wPick = filterPick(wSel, wOpts, sel?.worker ?? "", WORKER_CHARS, "workers",
                             sel ? null : (run ? "— no readable worker —" : "—"),
                             sel && !w ? [{value: sel.worker, full: `${sel.worker.split("/").pop()} (missing)`}] : [],
                             this.query[role("worker-filter")] ?? "", (q) => { this.query[role("worker-filter")] = q; },
                             role("worker-filter"));
    wPick.refill();
    titleFollows(wSel);
    wSel.addEventListener("change", () => this.handlers.onSide(side, wSel.value ? {worker: wSel.value, step: null} : null));
    wPick.box?.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter") return;
      ev.preventDefault();
      const o = wPick.first();
      if (o) this.handlers.onSide(side, {worker: o.value, step: null});
    });

    const steps = w?.steps ?? [];
    const sSel = h("select", {"data-role": role("step"), "aria-label": `${LABEL[side]} step`,
                              disabled: !sel || steps.length === 0}) as HTMLSelectElement;
    sSel.append(h("option", {value: ""}, steps.length ? `All steps (${steps.length})` : "All steps"));
    for (const n of steps) sSel.append(h("option", {value: String(n)}, `Step ${n}`));
    if (sel?.step !== null && sel?.step !== undefined && !steps.includes(sel.step)) {
      sSel.append(h("option", {value: String(sel.step)}, `Step ${sel.step}`));
    }
    sSel.value = sel?.step === null || sel?.step === undefined ? "" : String(sel.step);
    sSel.addEventListener("change", () => {
      if (sel) this.handlers.onSide(side, {worker: sel.worker, step: sSel.value === "" ? null : Number(sSel.value)});
    });

    const others = (run?.workers ?? []).filter((x) => x.status === "error" && x.id !== sel?.worker);
    const field = (label: string, el: HTMLElement, cls = "") => h("label", {class: "field" + cls}, h("span", {class: "field-label"}, label), el);
    replace(this.cards[side],
            h("div", {class: "side-title"}, h("span", {class: "tag"}, LABEL[side]),
              w?.device ? h("span", {class: "dev"}, w.device) : null),
            h("div", {class: "side-fields"}, field("Run", withBox(runSel, runPick.box, runPick.count), " f-run"),
              field("Worker / rank", withBox(wSel, wPick.box, wPick.count), wPick.box ? " f-run" : ""), field("Step", sSel)),
            statusLine(w),
            others.length ? h("details", {class: "side-errors"},
              h("summary", {class: "err-text"}, `${others.length} worker${others.length > 1 ? "s" : ""} of this run cannot be read`),
              h("ul", null, ...others.map((x) => h("li", null, h("b", null, x.name), `: ${x.error || "unknown error"}`))))
              : null);
  }

  private drawSuggestions(st: State): void {
    const pairs: Pair[] = this.runs?.pairs ?? [];
    if (!pairs.length) {
      replace(this.suggest);
      return;
    }
    const runsBy = new Map((this.runs?.runs ?? []).map((r) => [r.name, r]));
    const chip = (p: Pair) => {
      const [b, t] = pairSides(this.runs, p) ?? [null, null];
      const active = !!b && !!t && st.base?.worker === b.worker && st.target?.worker === t.worker;
      const dev = (n: string) => {
        const r = runsBy.get(n);
        return r ? ` (${runDevices(r)})` : "";
      };
      return h("button", {class: "chip" + (active ? " active" : ""), type: "button", disabled: !b || !t,
                          title: p.reason ? `Suggested because: ${p.reason}` : "Suggested pair",
                          "aria-pressed": String(active), "data-pair": `${p.baseline}→${p.target}`,
                          onClick: () => { if (b && t) this.handlers.onPair(b, t); }},
               `${p.baseline}${dev(p.baseline)} → ${p.target}${dev(p.target)}`);
    };
    const rest = pairs.slice(CHIPS_SHOWN);
    const leftOff = this.runs?.pairs_left_off ?? 0;
    const open = (this.suggest.querySelector("details.more-pairs") as HTMLDetailsElement | null)?.open ?? false;
    replace(this.suggest, h("span", {class: "muted"}, "Suggested:"), ...pairs.slice(0, CHIPS_SHOWN).map(chip),
            rest.length ? h("details", {class: "more-pairs", open},
                            h("summary", null, `${fmtCount(rest.length)} more`), h("div", {class: "suggest"}, ...rest.map(chip)))
                        : null,
            leftOff ? h("span", {class: "muted", "data-role": "pairs-left-off",
                                 title: "Each run is in at most a few suggestions and the list is bounded; type in a run box to find any run"},
                        `(${fmtCount(leftOff)} further candidates not listed)`) : null);
  }
}
