/**
 * The tab's controller: owns the state, the runs listing, the picker, the settings, the view
 * tabs and the content area; opens the top suggested pair when the URL holds no choice,
 * loads workers before comparing (POST load, poll runs with progress), draws the current view
 * from the view registry, keeps the URL hash in sync and refreshes on TensorBoard's reload.
 */
import {abortShown, ApiError, clearCache, getJSON, isLoading, postJSON, Stale} from "./api";
import {h, replace, sleep} from "./dom";
import {findWorker, pairSides, Picker, type SideKey} from "./picker";
import {availableViews, homeView, unavailableReason, type ViewCtx, viewDef, viewLabel, views} from "./registry";
import {Settings} from "./settings";
import {currentHash, defaultQuery, hashMatches, hashTab, PLUGIN, type SideSel, type State, stateFromHash,
        type TableQuery, type ViewName, watchHash, writeHash} from "./state";
import {connectHost} from "./tbhost";
import type {AnalysisInfo, Env, RunsResponse, Worker} from "./types";
import {registerAnalyses} from "./viewlist";
import {failure, progressBox} from "./views";
import {framedCrossOrigin, Workbook} from "./workbook";
import {MatchEditor} from "./matchedit";
import {setNameMap} from "./views";

export class App {
  private st: State;
  private runs: RunsResponse | null = null;
  private env: Env | undefined;
  private seq = 0;
  private shownKey = "";
  private requested = new Set<string>();
  /** A pair was chosen (in the URL, by the user, or opened once from the suggestions): never open one again. */
  private chosen: boolean;
  private scanTimer = 0;
  private readonly root = h("div", {id: "compare"});
  private readonly banner = h("div", {role: "alert"});
  private readonly tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Comparison views"});
  private readonly content = h("main", {class: "content", id: "pc-content", role: "tabpanel", tabindex: "-1"});
  private readonly workbook = new Workbook();
  private readonly settings = new Settings({onCompat: (on) => this.set({compat: on})});
  private readonly picker: Picker;
  private readonly editor: MatchEditor;

  constructor() {
    this.st = stateFromHash(currentHash());
    setNameMap(this.st.nameMap);
    this.chosen = !!(this.st.base || this.st.target);
    this.editor = new MatchEditor({
      useMap: (name) => this.useMap(name),
      current: () => this.st.nameMap,
      pair: () => (this.st.base && this.st.target ? {base: this.st.base, target: this.st.target} : null),
    });
    this.settings.el.querySelector(".settings-body")?.append(this.editor.settingsEl);
    this.settings.el.addEventListener("toggle", () => { if ((this.settings.el as HTMLDetailsElement).open) void this.editor.refreshMaps(); });
    this.settings.update(this.st);
    this.picker = new Picker({
      onSide: (side, sel) => this.setSide(side, sel),
      onSwap: () => this.set({base: this.st.target, target: this.st.base}),
      onPair: (base, target) => this.set({base, target}),
    }, h("div", {class: "pc-tools"}, this.workbook.el, this.settings.el));
  }

  async start(): Promise<void> {
    replace(this.root, h("h1", {class: "sr-only"}, "Profile compare"), this.banner, this.picker.el, this.tabs, this.content);
    document.body.append(this.root);
    this.drawTabs();
    watchHash((hash) => this.onHash(hash));
    window.setInterval(() => this.keepHash(), 1000);
    connectHost(() => void this.reload());
    await Promise.all([this.refreshRuns(), this.loadAnalyses()]);
    this.show(true);
  }

  /** Tabs for the server's analyses that no view shows (an older server without the route: none). */
  private async loadAnalyses(): Promise<void> {
    let list: AnalysisInfo[] = [];
    try {
      const r = await getJSON<{analyses?: AnalysisInfo[]}>("analyses");
      if (!isLoading(r) && Array.isArray(r?.analyses)) list = r.analyses;
    } catch {
      return;
    }
    if (!registerAnalyses(list)) return;
    const named = stateFromHash(currentHash());        // the URL may name one of the new views
    if (named.view !== this.st.view && viewDef(named.view)) {
      this.st = {...this.st, view: named.view, tables: {...named.tables, ...this.st.tables}};
    }
    this.drawTabs();
  }

  /** Used by tests and the reload channel: refetch runs and the current view. */
  async reload(): Promise<void> {
    clearCache();
    this.requested.clear();
    await this.refreshRuns();
    this.show(true);
  }

  // -- state ---------------------------------------------------------------------------
  /** The match editor's map `name` ("" none) becomes the current one: every view drawn anew
   *  (also for the same name: the map's entries changed). */
  private useMap(name: string): void {
    clearCache();
    this.set({nameMap: name}, false);
    this.show(true);
  }

  private set(patch: Partial<State>, render = true): void {
    const pairChanged = ("base" in patch || "target" in patch) &&
      JSON.stringify(["base" in patch ? patch.base : this.st.base, "target" in patch ? patch.target : this.st.target]) !== JSON.stringify([this.st.base, this.st.target]);
    if ("base" in patch || "target" in patch) this.chosen = true;
    this.st = {...this.st, ...patch};
    setNameMap(this.st.nameMap);
    if (pairChanged) {                 // another pair: start each table on its first page
      const tables: State["tables"] = {};
      for (const [v, q] of Object.entries(this.st.tables)) if (q) tables[v] = {...q, offset: 0};
      this.st.tables = tables;
    }
    writeHash(this.st);
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env, this.unreadable());
    this.settings.update(this.st);
    this.drawTabs();
    if (render) this.show(false);
  }

  /** List the runs again soon: the server's first scan of the log folder is not done, or a side still parses. */
  private refreshSoon(): void {
    if (this.scanTimer) return;
    this.scanTimer = window.setTimeout(() => {
      this.scanTimer = 0;
      void this.refreshRuns().then(() => this.show(false));
    }, 1000);
  }

  /** Without a choice in the URL or from the user, open the top suggested pair (once). */
  private openSuggested(): void {
    if (this.chosen || !this.runs) return;
    for (const p of this.runs.pairs ?? []) {
      const sides = pairSides(this.runs, p);
      if (sides) {
        this.set({base: sides[0], target: sides[1]}, false);
        return;
      }
    }
  }

  private setSide(side: SideKey, sel: SideSel | null): void {
    this.set(side === "base" ? {base: sel} : {target: sel});
  }

  private query(view: ViewName): TableQuery {
    return this.st.tables[view] ?? defaultQuery(view);
  }

  private onHash(hash: string): void {
    const tab = hashTab(hash);
    if (tab && tab !== PLUGIN) return;
    if (hashMatches(this.st, hash)) return;
    if (!hash.includes(`p.${PLUGIN}.`)) {          // TensorBoard dropped our keys (tab switch): put them back
      writeHash(this.st);
      return;
    }
    const next = stateFromHash(hash);
    if (next.base || next.target) this.chosen = true;
    this.st = {...next, tables: {...this.st.tables, ...next.tables}};
    setNameMap(this.st.nameMap);
    this.editor.drawSettings();
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env, this.unreadable());
    this.settings.update(this.st);
    this.drawTabs();
    this.show(false);
  }

  private keepHash(): void {
    const hash = currentHash();
    const tab = hashTab(hash);
    if ((!tab || tab === PLUGIN) && (this.st.base || this.st.target || this.st.compat || this.st.nameMap) && !hash.includes(`p.${PLUGIN}.`)) {
      writeHash(this.st);
    }
  }

  // -- data ----------------------------------------------------------------------------
  private async refreshRuns(): Promise<void> {
    try {
      const r = await getJSON<RunsResponse>("runs");
      if (isLoading(r)) return;
      this.runs = {runs: Array.isArray(r.runs) ? r.runs : [], pairs: r.pairs ?? [], pairs_left_off: r.pairs_left_off ?? 0,
                   env: r.env, error: r.error};
      this.env = r.env;
      if ((r.scanned_at === 0 || r.scanned_at === null) && !r.error) this.refreshSoon();
      replace(this.banner, r.error ? h("div", {class: "notice error"}, `Scanning the log folder failed: ${r.error}`) : null);
    } catch (e) {
      replace(this.banner, h("div", {class: "notice error"}, `Cannot list runs: ${(e as Error).message}`));
    }
    this.openSuggested();
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env, this.unreadable());
    this.drawTabs();
  }

  private available(): Set<ViewName> {
    return availableViews(findWorker(this.runs, this.st.base?.worker), findWorker(this.runs, this.st.target?.worker), this.runs);
  }

  // -- tabs ----------------------------------------------------------------------------
  private drawTabs(): void {
    const avail = this.available();
    if (!this.tabs.childElementCount) {
      this.tabs.addEventListener("keydown", (ev: KeyboardEvent) => {
        const names = views().map((d) => d.name).filter((v) => !this.hiddenTab(v, avail) || v === this.st.view);
        const i = names.indexOf(this.st.view), n = names.length;
        const j = ev.key === "ArrowRight" ? (i + 1) % n : ev.key === "ArrowLeft" ? (i + n - 1) % n
          : ev.key === "Home" ? 0 : ev.key === "End" ? n - 1 : -1;
        if (j < 0) return;
        ev.preventDefault();
        this.openView(names[j]);
      });
    }
    if (this.tabs.childElementCount !== views().length) {     // first draw, or views registered since
      replace(this.tabs, ...views().map((d) => h("button", {
        class: "tab", type: "button", role: "tab", id: `tab-${d.name}`, "data-view": d.name, "aria-controls": "pc-content",
        onClick: () => this.set({view: d.name}),
      }, d.label)));
    }
    for (const b of Array.from(this.tabs.children) as HTMLElement[]) {
      const v = b.dataset.view as ViewName;
      b.setAttribute("aria-selected", String(v === this.st.view));
      b.tabIndex = v === this.st.view ? 0 : -1;
      const why = this.reason(v);
      b.title = avail.has(v) ? viewLabel(v) : `${viewLabel(v)}: not available for this pair (${why})`;
      b.setAttribute("aria-disabled", String(!avail.has(v)));
      b.classList.toggle("na", !avail.has(v));
      b.hidden = this.hiddenTab(v, avail) && v !== this.st.view;
    }
  }

  /** A view that hides its tab when it cannot show the pair (the Cluster view without a cluster run). */
  private hiddenTab(v: ViewName, avail: Set<ViewName>): boolean {
    return !!viewDef(v)?.hideUnavailable && !avail.has(v);
  }

  /** Why no workbook can be made for the chosen pair (a side cannot be read), or null. */
  private unreadable(): string | null {
    const out: string[] = [];
    for (const [label, sel] of [["Baseline", this.st.base], ["Target", this.st.target]] as const) {
      const w = findWorker(this.runs, sel?.worker);
      if (w?.status === "error") out.push(`${label} (${w.name}) cannot be read: ${w.error || "unknown error"}`);
    }
    return out.length ? out.join("; ") : null;
  }

  private reason(v: ViewName): string | null {
    return unavailableReason(v, findWorker(this.runs, this.st.base?.worker), findWorker(this.runs, this.st.target?.worker), this.runs);
  }

  /**
   * Show view `name` (and focus its tab). With `sort`: the order that explains the link that
   * opened it (an overview hint), as the view's table query, descending, from its first page
   * and without a search, filter or variant left over.
   */
  private openView(name: ViewName, sort?: string, query?: Partial<TableQuery>): void {
    const patch: Partial<State> = {view: name};
    if (sort) patch.tables = {...this.st.tables, [name]: {...defaultQuery(name), limit: this.query(name).limit, sort, order: "desc"}};
    if (query) patch.tables = {...this.st.tables, [name]: {...defaultQuery(name), limit: this.query(name).limit, ...query}};
    this.set(patch);
    (this.tabs.querySelector(`#tab-${name}`) as HTMLElement | null)?.focus();
  }

  // -- content -------------------------------------------------------------------------
  private contentKey(): string {
    const s = this.st;
    const key = viewDef(s.view)?.renderKey?.({query: this.query(s.view), perStep: s.perStep});
    return JSON.stringify([s.base, s.target, s.compat, s.perStep, s.nameMap, s.view, key ?? null]);
  }

  private show(force: boolean): void {
    const key = this.contentKey();
    if (!force && key === this.shownKey) return;
    this.shownKey = key;
    abortShown();                      // the requests of the content drawn so far are of no use now
    const tok = ++this.seq;
    void this.renderContent(() => tok === this.seq).catch((e) => {
      if (!(e instanceof Stale) && tok === this.seq) replace(this.content, failure("This view", e));
    });
  }

  private async renderContent(alive: () => boolean): Promise<void> {
    const {base, target, view} = this.st;
    this.content.setAttribute("aria-labelledby", `tab-${view}`);
    if (!base || !target) {
      const pairs = this.runs?.pairs?.length ?? 0;
      replace(this.content, h("div", {class: "notice", "data-state": "empty"},
        h("b", null, "Pick a baseline and a target to compare. "),
        pairs ? "The suggested pairs above are one click away." : "Each side is a run, one of its workers (rank), and optionally one step."));
      return;
    }
    const def = viewDef(view);
    if (!def) return;
    const ok = def.noPairLoad || await this.ensureLoaded([["Baseline", base.worker], ["Target", target.worker]], alive);
    if (!ok || !alive()) return;
    const why = this.reason(view);
    if (why) {                         // known before asking the server: said once, no request
      replace(this.content, h("div", {class: "notice na", role: "status", "data-state": "not-available"},
        h("b", null, `The ${def.label} view is not available for this pair: `), why + "."));
      return;
    }
    const ctx: ViewCtx = {
      base, target, compat: this.st.compat, perStep: this.st.perStep, query: this.query(view),
      jump: this.env?.vscode === true || framedCrossOrigin(), available: this.available(), alive,
      onQuery: (q: TableQuery, rerender = false) => this.set({tables: {...this.st.tables, [view]: q}}, rerender),
      onPerStep: (v: boolean) => this.set({perStep: v}),
      onView: (v: string, sort?: string, query?: Partial<TableQuery>) => this.openView(v, sort, query),
      onSteps: (bs: number | null, ts: number | null) => this.set({base: {...base, step: bs}, target: {...target, step: ts}}),
      worker: (side) => findWorker(this.runs, (side === "base" ? base : target).worker),
      runs: () => this.runs,
      onPair: (b: SideSel, t: SideSel) => {
        this.set({base: b, target: t, view: homeView()});
        (this.tabs.querySelector(`#tab-${homeView()}`) as HTMLElement | null)?.focus();
      },
      editor: this.editor,
    };
    await def.render(this.content, ctx);
  }

  /** While one of these workers still parses (and the view is current), list the runs again each second. */
  private async followParse(ids: string[], alive: () => boolean): Promise<void> {
    while (alive() && ids.some((id) => findWorker(this.runs, id)?.status === "loading")) {
      await sleep(1000);
      if (!alive()) return;
      await this.refreshRuns();
    }
  }

  /** Parse both workers if needed, showing progress; false (with a message shown) if one cannot be read. */
  private async ensureLoaded(sides: Array<[string, string]>, alive: () => boolean): Promise<boolean> {
    let wait = 400;
    for (;;) {
      const ws = sides.map(([label, id]) => [label, id, findWorker(this.runs, id)] as [string, string, Worker | null]);
      const missing = ws.filter(([, , w]) => !w);
      if (missing.length && this.runs) {
        replace(this.content, h("div", {class: "notice error", role: "alert"}, ...missing.map(([label, id]) =>
          h("div", null, `${label} worker “${id}” is not in the log folder any more. Pick another one.`))));
        return false;
      }
      const bad = ws.filter(([, , w]) => w?.status === "error");
      if (bad.length) {
        void this.followParse(sides.map(([, id]) => id), alive);     // the other side's parse status, in place
        replace(this.content, h("div", {class: "notice error", role: "alert", "data-state": "worker-error"}, ...bad.map(([label, , w]) =>
          h("div", null, h("b", null, `${label} (${w!.name}) cannot be read: `), w!.error || "unknown error"))));
        return false;
      }
      const need = ws.filter(([, id, w]) => w?.status === "not_loaded" && !this.requested.has(id)).map(([, id]) => id);
      if (need.length) {
        need.forEach((id) => this.requested.add(id));
        try {
          await postJSON("load", {workers: need});
        } catch (e) {
          if (e instanceof ApiError && (e.status === 404 || e.status === 405)) return true;  // no load route: the compare routes parse on demand
          replace(this.content, failure("Loading the workers", e));
          return false;
        }
      }
      const pending = ws.filter(([, , w]) => w && (w.status === "loading" || w.status === "not_loaded"));
      if (!pending.length) return true;
      replace(this.content, h("div", {role: "status", "data-state": "loading"}, ...pending.map(([label, , w]) =>
        progressBox(`Parsing the ${label.toLowerCase()} (${w!.name})`, {loading: true, progress: w!.status === "loading"
          ? w!.progress ?? null : null, message: w!.status === "not_loaded" ? "queued" : ""}))));
      await sleep(wait);
      wait = Math.min(1500, wait * 1.3);
      if (!alive()) return false;
      await this.refreshRuns();
      if (!alive()) return false;
    }
  }
}
