/**
 * The view registry: every view of the tab (its name in the URL, its tab label, which
 * profile capabilities it needs and how it renders) is one `ViewDef`, registered once in
 * viewlist.ts. The tabs, the URL state, the availability check and the content area read
 * the views from here; no other module lists them.
 */
import type {MatchEditor} from "./matchedit";
import type {SideSel, TableQuery} from "./state";
import type {RunsResponse, Worker} from "./types";

/** What a view gets to draw one comparison. */
export interface ViewCtx {
  base: SideSel;
  target: SideSel;
  /** Reference figures (msprof-analyze compatible): sent as `reference_compat=1`. */
  compat: boolean;
  /** The view's table query from the URL (sort, search, page, variant). */
  query: TableQuery;
  /** Per-step figures: null is the server's default. */
  perStep: boolean | null;
  /** Call-stack frames may post jump-to-source messages (VSCode). */
  jump: boolean;
  /** The views this pair has the data for (names). */
  available: Set<string>;
  alive(): boolean;
  /** Store the table query (in the URL hash); `rerender` when the view must be drawn anew. */
  onQuery(q: TableQuery, rerender?: boolean): void;
  onPerStep(v: boolean): void;
  /**
   * Switch to another view (and focus its tab); `sort`: the column its table opens sorted by, descending;
   * `query`: what its table query starts with instead (a search, a variant: the timeline's item).
   */
  onView(name: string, sort?: string, query?: Partial<TableQuery>): void;
  /** Choose these steps in the step pickers (null: all steps), so every view compares them. */
  onSteps(base: number | null, target: number | null): void;
  /** The listed worker of a side (its steps, `has` flags), when known. */
  worker(side: "base" | "target"): Worker | null;
  /** The runs listing (every run and its workers), when known. */
  runs(): RunsResponse | null;
  /** Choose this pair in the pickers and show it in the home view (a cluster rank opened in the pair views). */
  onPair(base: SideSel, target: SideSel): void;
  /** The match editor (pair / split operators into the current name map), when the tab has one. */
  editor?: MatchEditor;
}

export interface ViewDef {
  /** Its key in the URL (`p.profile_compare.v=<name>`) and its tab's id. */
  name: string;
  /** The tab's label ("Operator"). */
  label: string;
  /** The worker `has` flags the view needs (kernels, communication, memory, modules). */
  needs?: readonly string[];
  /** Unavailable when either side lacks a needed flag; by default only when both lack it. */
  needsBoth?: boolean;
  /** Why the view cannot apply to this pair, beyond the `has` flags (null: it may apply). */
  notFor?(base: Worker | null, target: Worker | null, runs?: RunsResponse | null): string | null;
  /** When it cannot apply, hide its tab instead of greying it (a view only some runs have, e.g. Cluster). */
  hideUnavailable?: boolean;
  /** It reads whole runs, not the pair's parsed profiles: the two workers are not parsed before it renders. */
  noPairLoad?: boolean;
  /** Rows per page when the user has not chosen. */
  limit?: number;
  /** The server's analyses (`compare/<name>` routes) this view shows; by default its own name. */
  shows?: readonly string[];
  /** Beyond pair, view and settings: what makes the view draw anew when it changes. */
  renderKey?(ctx: Pick<ViewCtx, "query" | "perStep">): unknown;
  render(host: HTMLElement, ctx: ViewCtx): Promise<void>;
}

const defs: ViewDef[] = [];

/** Add a view (tab order is registration order); a name registers once. */
export function registerView(def: ViewDef): void {
  if (defs.some((d) => d.name === def.name)) throw new Error(`view ${def.name} registered twice`);
  defs.push(def);
}

export function views(): readonly ViewDef[] {
  return defs;
}

export function viewDef(name: string | null | undefined): ViewDef | undefined {
  return defs.find((d) => d.name === name);
}

export function viewLabel(name: string): string {
  return viewDef(name)?.label ?? name;
}

/** Whether some registered view shows the server's analysis `name`. */
export function analysisShown(name: string): boolean {
  return defs.some((d) => (d.shows ?? [d.name]).includes(name));
}

/** The first registered view: the one shown when the URL names none. */
export function homeView(): string {
  return defs[0]?.name ?? "overview";
}

/**
 * The views a pair can show, from each side's `has` flags (known once a worker is parsed;
 * a flag not known yet never hides a view).
 */
export function availableViews(base: Worker | null, target: Worker | null, runs: RunsResponse | null = null): Set<string> {
  const out = new Set<string>();
  for (const d of defs) if (unavailableReason(d.name, base, target, runs) === null) out.add(d.name);
  return out;
}

/** Why view `name` cannot show this pair (a sentence), or null when it may. */
export function unavailableReason(name: string, base: Worker | null, target: Worker | null,
                                  runs: RunsResponse | null = null): string | null {
  const d = viewDef(name);
  if (!d) return null;
  const lacks = (w: Worker | null, flag: string) => w?.status === "ok" && !!w.has && w.has[flag] === false;
  const flag = (d.needs ?? []).find((f) => (d.needsBoth ? lacks(base, f) || lacks(target, f) : lacks(base, f) && lacks(target, f)));
  if (flag) {
    const who = lacks(base, flag) && lacks(target, flag) ? "neither side has" : lacks(base, flag) ? "the baseline has no" : "the target has no";
    return `${who} ${flag} data`;
  }
  return d.notFor?.(base, target, runs) ?? null;
}
