/**
 * The Communication view: the overview's communication time rows (uncovered time, wait,
 * transmit, per group) from compare/overall, then every collective side by side with its
 * tasks from compare/communication (`{rows, notes}`).
 */
import {fetchReady, Stale, url} from "./api";
import {commTable, type CommRow, isCommRows} from "./comm";
import {h, replace} from "./dom";
import {metricTable} from "./metrics";
import {uniqueNotes} from "./overview";
import type {MetricRow, OverallResponse} from "./types";
import type {ViewCtx, ViewDef} from "./registry";
import {failure, pairParams, progressBox} from "./views";

/** The depth-0 communication rows of the overall metrics with everything under them. */
function commMetrics(rows: MetricRow[]): MetricRow[] {
  const out: MetricRow[] = [];
  let inside = false;
  for (const r of rows) {
    const d = typeof r.depth === "number" ? r.depth : 0;
    if (d === 0) inside = /communication/i.test(r.name);
    if (inside) out.push(r);
  }
  return out;
}

async function renderCommView(host: HTMLElement, ctx: ViewCtx): Promise<void> {
  const timeBox = h("div", null, progressBox("Loading the communication time", null));
  const notesBox = h("div");
  const opsBox = h("div", null, progressBox("Loading the collectives", null));
  replace(host, h("h2", {style: {marginTop: "0"}}, "Communication time"), timeBox,
          h("h2", null, "Collectives"), notesBox, opsBox);
  const pair = pairParams(ctx.base, ctx.target, ctx.compat);
  const time = (async () => {
    try {
      const data = await fetchReady<OverallResponse>(url("compare/overall", pair), ctx.alive,
                                                     (l) => { if (ctx.alive()) replace(timeBox, progressBox("Comparing", l)); });
      if (!ctx.alive()) return;
      const rows = commMetrics(data.overall_metrics ?? []);
      replace(timeBox, rows.length ? metricTable(rows, "Communication time")
        : h("div", {class: "notice na"}, "Neither side has communication time."));
    } catch (e) {
      if (e instanceof Stale || !ctx.alive()) return;
      replace(timeBox, failure("The communication time", e));
    }
  })();
  const ops = (async () => {
    try {
      const data = await fetchReady<{rows?: CommRow[]; notes?: string[]}>(url("compare/communication", pair), ctx.alive,
                                                                          (l) => { if (ctx.alive()) replace(opsBox, progressBox("Comparing", l)); });
      if (!ctx.alive()) return;
      const notes = uniqueNotes(Array.isArray(data?.notes) ? data.notes : []);
      replace(notesBox, notes.length ? h("div", {class: "notice warn", role: "note"},
                                         h("ul", {class: "notes"}, ...notes.map((n) => h("li", null, n)))) : null);
      const rows = Array.isArray(data?.rows) ? data.rows : [];
      replace(opsBox, rows.length && isCommRows(rows) ? commTable(rows)
        : h("div", {class: "notice na", "data-state": "empty"}, "No collectives on either side."));
    } catch (e) {
      if (e instanceof Stale || !ctx.alive()) return;
      replace(opsBox, failure("The collective comparison", e));
    }
  })();
  await Promise.all([time, ops]);
}

export const communicationView: ViewDef = {name: "communication", label: "Communication", needs: ["communication"],
                                             render: renderCommView};
