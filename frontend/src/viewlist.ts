/**
 * The tab's views, in tab order: one registration line per view. A new view is its own
 * module exporting a `ViewDef` (registry.ts) plus one line here. After them, every analysis
 * of the server's registry (the `analyses` route) that no view shows gets a table view of its
 * own, so an analysis added on the server alone appears as a tab.
 */
import {clusterView} from "./clusterview";
import {communicationView} from "./commview";
import {memoryView} from "./memview";
import {overviewView} from "./overviewview";
import {analysisShown, registerView} from "./registry";
import {stepsView} from "./stepsview";
import {apiView, kernelView, moduleView, operatorView, tableView} from "./tableviews";
import {timelineView} from "./timelineview";
import type {AnalysisInfo} from "./types";

registerView(overviewView);
registerView(stepsView);
registerView(operatorView);
registerView(moduleView);
registerView(kernelView);
registerView(timelineView);
registerView(apiView);
registerView(communicationView);
registerView(memoryView);
registerView(clusterView);

/** Register a table view for each listed analysis with a route that no view shows yet; true if any was added. */
export function registerAnalyses(list: readonly AnalysisInfo[]): boolean {
  let added = false;
  for (const a of list) {
    if (!a || typeof a.name !== "string" || !/^[a-z0-9_]+$/.test(a.name)) continue;
    if (Array.isArray(a.outputs) && !a.outputs.includes("route")) continue;
    if (analysisShown(a.name)) continue;
    registerView(tableView(a.name, a.label || a.name, {needs: Array.isArray(a.needs) ? a.needs : [], tree: !!a.tree}));
    added = true;
  }
  return added;
}
