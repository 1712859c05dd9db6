/**
 * The views that are one server-paged table of `compare/<name>`: operator (by name, or per
 * instance from `compare/operator_pairs`), module (a tree), kernel and api. `tableView`
 * makes such a view from its name and label.
 */
import {h} from "./dom";
import {PAIR_SEP} from "./matchedit";
import type {ViewCtx, ViewDef} from "./registry";
import {isOp} from "./tree";
import type {Row} from "./types";
import {defaultQuery} from "./state";
import {timelineLink} from "./timelineview";
import {showTable} from "./views";

interface TableViewOpts {
  needs?: readonly string[];
  shows?: readonly string[];
  needsBoth?: boolean;
  limit?: number;
  tree?: boolean;
  /** The route for this query, when it is not `compare/<name>`. */
  route?(ctx: ViewCtx): string;
  /** The table's label, when it is not "<label> comparison". */
  title?(ctx: ViewCtx): string;
  /** Controls shown in the table's toolbar. */
  extra?(ctx: ViewCtx): HTMLElement | null;
  /** Controls in a row's first cell. */
  rowAction?(ctx: ViewCtx): ((r: Row) => HTMLElement | null) | undefined;
  renderKey?: ViewDef["renderKey"];
}

export function tableView(name: string, label: string, o: TableViewOpts = {}): ViewDef {
  return {
    name, label, needs: o.needs, needsBoth: o.needsBoth, limit: o.limit, shows: o.shows, renderKey: o.renderKey,
    async render(host, ctx) {
      const title = o.title?.(ctx) ?? `${label} comparison`;
      await showTable(host, {route: o.route?.(ctx) ?? name, label: title, what: `The ${title}`, tree: !!o.tree,
                             extra: o.extra?.(ctx) ?? null, rowAction: o.rowAction?.(ctx)},
                      ctx, ctx.query, (q) => ctx.onQuery(q));
    },
  };
}

/** A row's controls side by side (the match editor's, the timeline link). */
function both(a: HTMLElement | null, b: HTMLElement | null): HTMLElement | null {
  return a && b ? h("span", {class: "row-actions"}, a, b) : a ?? b;
}

const perInstance = (ctx: Pick<ViewCtx, "query">) => ctx.query.sub === "pairs";

/** The operator view's switch between statistics by name and per-instance pairs. */
function operatorModes(ctx: ViewCtx): HTMLElement {
  const pairs = perInstance(ctx);
  const btn = (label: string, on: boolean, sub: string, title: string) =>
    h("button", {class: "seg" + (on ? " on" : ""), type: "button", "aria-pressed": String(on), "data-mode": sub || "name", title,
                 onClick: () => { if (!on) ctx.onQuery({...defaultQuery("operator"), limit: ctx.query.limit, sub}, true); }}, label);
  const modes = h("div", {class: "field"}, h("span", {class: "field-label"}, "Operators"),
           h("div", {class: "segs", role: "group", "aria-label": "Operator comparison mode"},
             btn("By name", !pairs, "", "One row per operator name: counts and device time summed"),
             btn("Per instance", pairs, "pairs", "Each baseline call matched with its target call (input shapes side by side)")));
  return ctx.editor ? h("div", {class: "toolbar-group"}, modes, ctx.editor.toolbar()) : modes;
}

/** An Operator row's timeline link: the baseline's operator (a row a name map merged, "a ↔ b": a), the
 * target's for a target-only row; a per-instance row's call by its input shapes too. */
function operatorTimelineLink(ctx: ViewCtx, r: Row): HTMLElement | null {
  const target = r.status === "target_only";
  if (perInstance(ctx)) {
    const name = String((target ? r.t_name : r.b_name) ?? r.name ?? "");
    const shapes = target ? r.t_input_shape : r.b_input_shape;
    return timelineLink(ctx, "operator", name, r.status, typeof shapes === "string" && shapes !== "N/A" ? shapes : "");
  }
  const parts = String(r.name ?? "").split(PAIR_SEP);
  return timelineLink(ctx, "operator", target ? parts[parts.length - 1] : parts[0], r.status);
}

export const operatorView = tableView("operator", "Operator", {
  shows: ["operator", "operator_pairs"],
  route: (ctx) => (perInstance(ctx) ? "operator_pairs" : "operator"),
  title: (ctx) => (perInstance(ctx) ? "Operator comparison, per instance" : "Operator comparison"),
  extra: operatorModes,
  rowAction: (ctx) => (r: Row) => both(ctx.editor?.rowAction(ctx, perInstance(ctx), r) ?? null, operatorTimelineLink(ctx, r)),
  renderKey: (ctx) => ctx.query.sub,
});

/** The module tree: a baseline-only operator under a module can be paired too, and an operator row
 * a name map paired ("a ↔ b") split (the match editor); rows of one name offer nothing (no name map can split them). */
export const moduleView = tableView("module", "Module", {
  needs: ["modules"], needsBoth: true, limit: 500, tree: true,
  extra: (ctx) => ctx.editor?.toolbar() ?? null,
  rowAction: (ctx) => (ctx.editor
    ? (r: Row) => (isOp(r) && (r.status === "baseline_only" || (r.status === "both" && String(r.name ?? "").includes(PAIR_SEP)))
      ? ctx.editor!.rowAction(ctx, false, r) : null)
    : undefined),
});

export const kernelView: ViewDef = {
  ...tableView("kernel", "Kernel", {rowAction: (ctx) => (r: Row) => timelineLink(ctx, "kernel", String(r.kernel ?? r.name ?? ""), r.status,
    typeof r.input_shape === "string" && r.input_shape !== "N/A" ? r.input_shape : "")}),
  notFor: (b, t) => (b?.device && t?.device && b.device !== t.device
    ? `kernels differ by platform (baseline ${b.device}, target ${t.device}); the Operator and Module views compare them`
    : null),
};

export const apiView = tableView("api", "API");
