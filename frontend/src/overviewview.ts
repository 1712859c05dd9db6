/**
 * The Overview view: fetches `compare/overall` (per-step when asked) with progress and draws
 * it with overview.ts.
 */
import {fetchReady, Stale, url} from "./api";
import {replace} from "./dom";
import {renderOverview} from "./overview";
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
  } catch (e) {
    if (e instanceof Stale || !ctx.alive()) return;
    replace(host, failure("The overall comparison", e));
  }
}

export const overviewView: ViewDef = {name: "overview", label: "Overview", renderKey: (ctx) => ctx.perStep, render};
