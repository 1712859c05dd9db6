/**
 * The Overview view: fetches `compare/overall` (per-step when asked) with progress and draws
 * it with overview.ts.
 */
import {fetchReady, Stale, url} from "./api";
import {h, replace} from "./dom";
import {renderOverview, type StepHint, stepHints} from "./overview";
import type {ViewCtx, ViewDef} from "./registry";
import type {OverallResponse} from "./types";
import {failure, pairParams, progressBox} from "./views";

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

export const overviewView: ViewDef = {name: "overview", label: "Overview", renderKey: (ctx) => ctx.perStep, render};
