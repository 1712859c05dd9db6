/**
 * The Overview view: fetches `compare/overall` (per-step when asked) with progress and draws
 * it with overview.ts.
 */
import {fetchReady, Stale, url} from "./api";
import {h, replace} from "./dom";
import {renderOverview, type StepHint, stepHints} from "./overview";
import type {ViewCtx, ViewDef} from "./registry";
import type {OverallResponse} from "./types";
import {currentNameMap, failure, pairParams, progressBox} from "./views";
import {fmtNum} from "./format";

async function render(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const {base, target, perStep} = ctx;
  replace(host, progressBox("Comparing baseline and target", null));
  const u = url("compare/overall", {...pairParams(base, target, ctx.compat),
                                    per_step: perStep === null ? null : perStep ? "1" : "0"});
  try {
    const data = await fetchReady<OverallResponse>(u, ctx.alive, (l) => {
      if (ctx.alive()) replace(host, progressBox("Comparing baseline and target", l));
    });
    if (!ctx.alive()) return;
    const b = ctx.worker("base"), t = ctx.worker("target");
    const nb = base.step !== null ? 1 : b?.steps?.length ?? 0, nt = target.step !== null ? 1 : t?.steps?.length ?? 0;
    replace(host, renderOverview({data, perStep, stepsDiffer: nb > 0 && nt > 0 && nb !== nt, available: ctx.available,
                                  onPerStep: ctx.onPerStep, onView: ctx.onView}));
    void fillStepHints(host, ctx);
    void fillMatchHint(host, ctx);
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure("The overall comparison", e));
  }
}

/**
 * The step-level hints under the overview's hints, from `compare/steps` (the Steps view's
 * request: every step of both sides, so the answer is shared): asked after the overview is
 * drawn, never holding it up. A failure is said in one muted line.
 */
async function fillStepHints(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const slot = host.querySelector<HTMLElement>(".step-hints");
  if (!slot) return;
  const u = url("compare/steps", pairParams({worker: ctx.base.worker, step: null}, {worker: ctx.target.worker, step: null},
                                            ctx.compat));
  try {
    const data = await fetchReady<{hints?: StepHint[]}>(u, ctx.alive, () => undefined);
    if (!ctx.alive()) return;
    const list = stepHints(Array.isArray(data.hints) ? data.hints : [], ctx.available, ctx.onView);
    slot.dataset.state = "done";
    if (list) slot.append(list);
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    slot.dataset.state = "error";
    slot.append(h("p", {class: "muted"}, `Step-level hints unavailable: ${e instanceof Error ? e.message : String(e)}`));
  }
}

interface MatchSide {count: number; names: number; baseline_ms: number; target_ms: number}

/**
 * The operator-matching hint (`compare/matching`, with the current name map): how many top-level
 * operators each side has that the matching left alone, and their device time, pointing at the
 * Operator view where the match editor pairs them. Asked after the overview is drawn.
 */
async function fillMatchHint(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const slot = host.querySelector<HTMLElement>(".step-hints");
  if (!slot || !ctx.available.has("operator")) return;
  const u = url("compare/matching", pairParams(ctx.base, ctx.target, ctx.compat, ctx.perStep));
  try {
    const m = await fetchReady<{matched: MatchSide; baseline_only: MatchSide; target_only: MatchSide; name_map_entries?: number}>(
      u, ctx.alive, () => undefined);
    if (!ctx.alive() || !m?.matched) return;
    const bo = m.baseline_only, to = m.target_only;
    if (!bo.count && !to.count && !m.name_map_entries) return;
    const n = m.name_map_entries ?? 0;
    const text = `${m.matched.count} matched; ${bo.count} baseline-only (${fmtNum(bo.baseline_ms)} ms) and ` +
      `${to.count} target-only (${fmtNum(to.target_ms)} ms) top-level operator calls, device time over the whole capture` +
      (n ? `, with the name map ${currentNameMap()} (${n} ${n === 1 ? "entry" : "entries"})` : "");
    slot.before(h("ul", {class: "hints match-hint", "aria-label": "Operator matching"},
      h("li", {class: "info", "data-role": "matching-hint", "data-matched": String(m.matched.count),
               "data-baseline-only": String(bo.count), "data-target-only": String(to.count)},
        h("b", null, "Operator matching"), " ", text,
        h("span", {class: "muted"}, " — unmatched operators are compared with nothing: pair them (or split a wrong pair) in the "),
        h("button", {class: "linkish", type: "button", "data-view": "operator", onClick: () => ctx.onView("operator")}, "Operator view"),
        ctx.available.has("module")
          ? h("span", {class: "muted"}, " or the ", h("button", {class: "linkish", type: "button", "data-view": "module",
                                                                 onClick: () => ctx.onView("module")}, "Module view"))
          : null)));
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
  }
}

export const overviewView: ViewDef = {name: "overview", label: "Overview", renderKey: (ctx) => ctx.perStep, render};
