/**
 * The tab's controller: owns the state, the runs listing, the picker, the view tabs and the
 * content area; loads workers before comparing (POST load, poll runs with progress), keeps
 * the URL hash in sync and refreshes on TensorBoard's reload.
 */
import {ApiError, clearCache, fetchReady, getJSON, isLoading, postJSON, Stale, url} from "./api";
import {h, replace, sleep} from "./dom";
import {renderOverview, VIEW_LABEL} from "./overview";
import {findWorker, Picker, type SideKey} from "./picker";
import {currentHash, defaultQuery, hashMatches, hashTab, PLUGIN, type SideSel, type State, stateFromHash,
        type TableQuery, VIEWS, type ViewName, watchHash, writeHash} from "./state";
import {connectHost} from "./tbhost";
import type {Env, OverallResponse, RunsResponse, Worker} from "./types";
import {renderCommView} from "./commview";
import {renderMemoryView} from "./memview";
import {failure, pairParams, progressBox, renderTableView} from "./views";
import {framedCrossOrigin, Workbook} from "./workbook";

const NEEDS: Partial<Record<ViewName, string>> = {memory: "memory", module: "modules", communication: "communication"};

export class App {
  private st: State;
  private runs: RunsResponse | null = null;
  private env: Env | undefined;
  private seq = 0;
  private shownKey = "";
  private requested = new Set<string>();
  private readonly root = h("div", {id: "compare"});
  private readonly banner = h("div", {role: "alert"});
  private readonly tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Comparison views"});
  private readonly content = h("main", {class: "content", id: "pc-content", role: "tabpanel", tabindex: "-1"});
  private readonly workbook = new Workbook();
  private readonly picker: Picker;

  constructor() {
    this.st = stateFromHash(currentHash());
    this.picker = new Picker({
      onSide: (side, sel) => this.setSide(side, sel),
      onSwap: () => this.set({base: this.st.target, target: this.st.base}),
      onPair: (base, target) => this.set({base, target}),
    }, this.workbook.el);
  }

  async start(): Promise<void> {
    replace(this.root, h("h1", {class: "sr-only"}, "Profile compare"), this.banner, this.picker.el, this.tabs, this.content);
    document.body.append(this.root);
    this.drawTabs();
    watchHash((hash) => this.onHash(hash));
    window.setInterval(() => this.keepHash(), 1000);
    connectHost(() => void this.reload());
    await this.refreshRuns();
    this.show(true);
  }

  /** Used by tests and the reload channel: refetch runs and the current view. */
  async reload(): Promise<void> {
    clearCache();
    this.requested.clear();
    await this.refreshRuns();
    this.show(true);
  }

  // -- state ---------------------------------------------------------------------------
  private set(patch: Partial<State>, render = true): void {
    const pairChanged = ("base" in patch || "target" in patch) &&
      JSON.stringify(["base" in patch ? patch.base : this.st.base, "target" in patch ? patch.target : this.st.target]) !== JSON.stringify([this.st.base, this.st.target]);
    this.st = {...this.st, ...patch};
    if (pairChanged) {                 // another pair: start each table on its first page
      const tables: State["tables"] = {};
      for (const [v, q] of Object.entries(this.st.tables)) tables[v as ViewName] = {...q, offset: 0};
      this.st.tables = tables;
    }
    writeHash(this.st);
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env);
    this.drawTabs();
    if (render) this.show(false);
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
    this.st = {...next, tables: {...this.st.tables, ...next.tables}};
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env);
    this.drawTabs();
    this.show(false);
  }

  private keepHash(): void {
    const hash = currentHash();
    const tab = hashTab(hash);
    if ((!tab || tab === PLUGIN) && (this.st.base || this.st.target) && !hash.includes(`p.${PLUGIN}.`)) writeHash(this.st);
  }

  // -- data ----------------------------------------------------------------------------
  private async refreshRuns(): Promise<void> {
    try {
      const r = await getJSON<RunsResponse>("runs");
      if (isLoading(r)) return;
      this.runs = {runs: Array.isArray(r.runs) ? r.runs : [], pairs: r.pairs ?? [], env: r.env, error: r.error};
      this.env = r.env;
      replace(this.banner, r.error ? h("div", {class: "notice error"}, `Scanning the log folder failed: ${r.error}`) : null);
    } catch (e) {
      replace(this.banner, h("div", {class: "notice error"}, `Cannot list runs: ${(e as Error).message}`));
    }
    this.picker.update(this.runs, this.st);
    this.workbook.update(this.st, this.env);
    this.drawTabs();
  }

  private available(): Set<ViewName> {
    const out = new Set<ViewName>(VIEWS);
    const b = findWorker(this.runs, this.st.base?.worker), t = findWorker(this.runs, this.st.target?.worker);
    // a worker's `has` flags are known only once it is parsed
    const lacks = (w: Worker | null, flag: string) => w?.status === "ok" && !!w.has && w.has[flag] === false;
    for (const [view, flag] of Object.entries(NEEDS)) {
      const gone = view === "module" ? lacks(b, flag) || lacks(t, flag) : lacks(b, flag) && lacks(t, flag);
      if (gone) out.delete(view as ViewName);
    }
    return out;
  }

  // -- tabs ----------------------------------------------------------------------------
  private drawTabs(): void {
    const avail = this.available();
    if (!this.tabs.childElementCount) {
      this.tabs.append(...VIEWS.map((v) => h("button", {
        class: "tab", type: "button", role: "tab", id: `tab-${v}`, "data-view": v, "aria-controls": "pc-content",
        onClick: () => this.set({view: v}),
      }, VIEW_LABEL[v])));
      this.tabs.addEventListener("keydown", (ev: KeyboardEvent) => {
        const i = VIEWS.indexOf(this.st.view);
        const j = ev.key === "ArrowRight" ? (i + 1) % VIEWS.length : ev.key === "ArrowLeft" ? (i + VIEWS.length - 1) % VIEWS.length
          : ev.key === "Home" ? 0 : ev.key === "End" ? VIEWS.length - 1 : -1;
        if (j < 0) return;
        ev.preventDefault();
        this.set({view: VIEWS[j]});
        (this.tabs.querySelector(`#tab-${VIEWS[j]}`) as HTMLElement | null)?.focus();
      });
    }
    for (const b of Array.from(this.tabs.children) as HTMLElement[]) {
      const v = b.dataset.view as ViewName;
      b.setAttribute("aria-selected", String(v === this.st.view));
      b.tabIndex = v === this.st.view ? 0 : -1;
      b.title = avail.has(v) ? VIEW_LABEL[v] : `${VIEW_LABEL[v]} (the profiles may lack the data for this view)`;
    }
  }

  // -- content -------------------------------------------------------------------------
  private contentKey(): string {
    const s = this.st;
    return JSON.stringify([s.base, s.target, s.view, s.view === "overview" ? s.perStep : null,
                           s.view === "operator" ? this.query("operator").sub : null]);
  }

  private show(force: boolean): void {
    const key = this.contentKey();
    if (!force && key === this.shownKey) return;
    this.shownKey = key;
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
    const ok = await this.ensureLoaded([["Baseline", base.worker], ["Target", target.worker]], alive);
    if (!ok || !alive()) return;
    const ctx = {
      base, target, jump: this.env?.vscode === true || framedCrossOrigin(), alive,
      query: this.query(view),
      onQuery: (q: TableQuery, rerender = false) => this.set({tables: {...this.st.tables, [view]: q}}, rerender),
    };
    if (view === "overview") await this.renderOverview(alive);
    else if (view === "memory") await renderMemoryView(this.content, ctx);
    else if (view === "communication") await renderCommView(this.content, ctx);
    else await renderTableView(view, this.content, ctx);
  }

  private async renderOverview(alive: () => boolean): Promise<void> {
    const {base, target, perStep} = this.st;
    if (!base || !target) return;
    replace(this.content, progressBox("Comparing baseline and target", null));
    const u = url("compare/overall", {...pairParams(base, target), per_step: perStep === null ? null : perStep ? "1" : "0"});
    try {
      const data = await fetchReady<OverallResponse>(u, alive, (l) => {
        if (alive()) replace(this.content, progressBox("Comparing baseline and target", l));
      });
      if (!alive()) return;
      const b = findWorker(this.runs, base.worker), t = findWorker(this.runs, target.worker);
      const nb = base.step !== null ? 1 : b?.steps?.length ?? 0, nt = target.step !== null ? 1 : t?.steps?.length ?? 0;
      replace(this.content, renderOverview({
        data, perStep, stepsDiffer: nb > 0 && nt > 0 && nb !== nt, available: this.available(),
        onPerStep: (v) => this.set({perStep: v}),
        onView: (v) => {
          this.set({view: v});
          (this.tabs.querySelector(`#tab-${v}`) as HTMLElement | null)?.focus();
        },
      }));
    } catch (e) {
      if (e instanceof Stale || !alive()) return;
      replace(this.content, failure("The overall comparison", e));
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
