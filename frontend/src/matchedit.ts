/**
 * The match editor: "pair…" on a baseline-only operator row (a searchable list of target-only
 * candidates from `compare/match_candidates`), "split" on a paired row, Undo, and the saved name
 * maps in the settings (load, stop using, remove). Every edit is saved at once into the current
 * map (`name_maps/edit`; a new map is named after the pair) and the map's name is the state's
 * `nameMap`, sent by every comparison route as `name_map=<name>`, so every view, the overview's
 * matching hint and the workbook follow it. A pair of identical names cannot be split by a name
 * map: its split button says so and is disabled.
 */
import {fetchReady, getJSON, isLoading, postJSON, Stale, url} from "./api";
import {h, replace} from "./dom";
import {fmtNum} from "./format";
import type {ViewCtx} from "./registry";
import type {SideSel} from "./state";
import type {Row} from "./types";
import {pairParams} from "./views";

export const PAIR_SEP = " ↔ ";     // how the statistics by name show a pair the map made

interface SavedMap {
  name: string;
  path?: string;
  pairs?: Record<string, string>;
  count?: number;
  error?: string;
}

interface Candidate {
  name: string;
  score: number;
  name_score: number;
  shape_score: number;
  time_score: number;
  count: number;
  device_ms: number;
  shape: string | null;
}

interface Candidates {
  name: string;
  status: string;
  baseline: {count: number; device_ms: number; shape: string | null} | null;
  candidates: Candidate[];
  total: number;
}

interface EditAnswer {
  name: string;
  path: string;
  pairs: Record<string, string>;
  previous: Record<string, string>;
  changed: boolean;
}

interface UndoStep {
  mapName: string;                       // the map the edit saved into
  before: Record<string, string>;        // its entries before the edit
  prevCurrent: string;                   // the current map before the edit ("" none)
  created: boolean;                      // the edit made the map
  what: string;
}

export interface EditorHost {
  /** Make `name` the current map ("" none), the cached answers dropped, and draw every view anew. */
  useMap(name: string): void;
  current(): string;
  pair(): {base: SideSel; target: SideSel} | null;
}

const IDENTICAL = "The same name on both sides: a name map applies to both sides alike, so it cannot split this pair";

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._-]+|[._-]+$/g, "").slice(0, 80) || "edits";
}

export class MatchEditor {
  private undoSteps: UndoStep[] = [];
  private maps: SavedMap[] = [];
  private folder = "";
  private readonly message = h("span", {class: "match-msg muted", role: "status", "data-role": "match-status"});
  readonly settingsEl = h("div", {class: "name-maps", "data-role": "name-maps"});

  constructor(private readonly app: EditorHost) {
    void this.refreshMaps();
  }

  // -- the saved maps ----------------------------------------------------------------------
  async refreshMaps(): Promise<void> {
    try {
      const r = await getJSON<{folder?: string; maps?: SavedMap[]}>("name_maps");
      if (isLoading(r)) return;
      this.maps = Array.isArray(r?.maps) ? r.maps : [];
      this.folder = r?.folder ?? "";
    } catch {
      this.maps = [];
    }
    this.drawSettings();
  }

  drawSettings(): void {
    const cur = this.app.current();
    const items = this.maps.map((m) => h("li", {"data-map": m.name, class: m.name === cur ? "on" : ""},
      h("span", {class: "map-name", title: m.path ?? ""}, m.name), " ",
      h("span", {class: "muted"}, m.error ? "(unreadable)" : `(${m.count ?? 0} ${(m.count ?? 0) === 1 ? "entry" : "entries"})`), " ",
      m.name === cur ? h("b", null, "in use")
        : h("button", {class: "btn small", type: "button", "data-role": "use-map", onClick: () => this.use(m.name)}, "Use"),
      h("button", {class: "btn small", type: "button", "data-role": "remove-map", title: `Delete ${m.path ?? m.name}`,
                   onClick: () => void this.remove(m.name)}, "Remove")));
    replace(this.settingsEl,
      h("div", {class: "field-label"}, "Operator name maps (match editor)"),
      items.length ? h("ul", {class: "map-list"}, ...items) : h("div", {class: "muted"}, "None saved yet: pair or split operators in the Operator view."),
      cur ? h("button", {class: "btn small", type: "button", "data-role": "no-map", onClick: () => this.use("")},
              "Original matching (no map)") : null,
      this.folder ? h("div", {class: "muted small"}, `Saved in ${this.folder}; tb-compare --op-name-map FILE reads them.`) : null);
  }

  private use(name: string): void {
    this.undoSteps = [];
    this.say(name ? `Using the name map ${name}.` : "Original matching (no name map).");
    this.app.useMap(name);
    this.drawSettings();
  }

  private async remove(name: string): Promise<void> {
    const wasCurrent = this.app.current() === name;
    if (wasCurrent) this.use("");                // leave the map before it goes (see undo)
    try {
      await postJSON("name_maps/remove", {name});
    } catch (e) {
      this.say(`Could not remove ${name}: ${(e as Error).message}`, true);
      return;
    }
    this.undoSteps = this.undoSteps.filter((u) => u.mapName !== name);
    await this.refreshMaps();
    this.say(wasCurrent ? `Removed the name map ${name}; original matching (no name map).` : `Removed the name map ${name}.`);
  }

  // -- edits -------------------------------------------------------------------------------
  private say(text: string, error = false): void {
    this.message.textContent = text;
    this.message.title = text;
    this.message.className = "match-msg " + (error ? "err-text" : "muted");
  }

  private async edit(action: "pair" | "split", bName: string, tName: string): Promise<void> {
    const p = this.app.pair();
    if (!p) return;
    const prevCurrent = this.app.current();
    let name = prevCurrent;
    if (!name) {                                   // a new map, named after the pair, never over a saved one
      const stem = safeName(`edits_${p.base.worker.split("/")[0]}_vs_${p.target.worker.split("/")[0]}`);
      name = stem;
      for (let i = 2; this.maps.some((m) => m.name === name); i++) name = `${stem}_${i}`;
    }
    const created = !prevCurrent;
    const before = created ? {} as Record<string, string> : undefined;   // a new map starts empty
    this.say(action === "pair" ? "Pairing…" : "Splitting…");
    let r: EditAnswer;
    try {
      r = await postJSON<EditAnswer>("name_maps/edit", {name, baseline: p.base.worker, target: p.target.worker, action,
                                                        b_name: bName, t_name: tName, ...(before ? {pairs: before} : {})});
    } catch (e) {
      this.say(`${action === "pair" ? "Pairing" : "Splitting"} failed: ${(e as Error).message}`, true);
      return;
    }
    this.undoSteps.push({mapName: r.name, before: r.previous, prevCurrent, created,
                         what: action === "pair" ? `pair ${bName} with ${tName}` : `split ${bName} from ${tName}`});
    this.say(`${action === "pair" ? "Paired" : "Split"}: ${bName} ${action === "pair" ? "↔" : "✕"} ${tName} (saved in ${r.name}).`);
    this.app.useMap(r.name);
    void this.refreshMaps();
  }

  async undo(): Promise<void> {
    const step = this.undoSteps.pop();
    if (!step) return;
    if (step.created) {
      // Leave the map before removing it: drawing the views anew aborts their requests that name
      // it, so none reaches the server after it is gone (which would answer 400).
      this.app.useMap(step.prevCurrent);
    }
    try {
      if (step.created) await postJSON("name_maps/remove", {name: step.mapName});
      else await postJSON("name_maps/save", {name: step.mapName, pairs: step.before});
    } catch (e) {
      this.say(`Undo failed: ${(e as Error).message}`, true);
      void this.refreshMaps();
      return;
    }
    this.say(`Undone: ${step.what}.`);
    if (!step.created) this.app.useMap(step.mapName);
    void this.refreshMaps();
  }

  // -- the Operator view's parts -------------------------------------------------------------
  /** The toolbar group: which map is in use, Undo, what the last edit did. */
  toolbar(): HTMLElement {
    const cur = this.app.current();
    const undo = h("button", {class: "btn", type: "button", "data-role": "match-undo", disabled: !this.undoSteps.length,
                              title: this.undoSteps.length ? `Undo: ${this.undoSteps[this.undoSteps.length - 1].what}` : "Nothing to undo",
                              onClick: () => void this.undo()}, "↶ Undo");
    this.message.title = this.message.textContent ?? "";
    return h("div", {class: "field match-tools", "data-role": "match-tools"},
             h("span", {class: "field-label"}, "Matching"),
             h("div", {class: "match-row"},
               h("span", {"data-role": "current-map", class: "current-map",
                          title: "The operator name map every view uses (⚙ Settings lists the saved maps)"},
                 cur ? `name map ${cur}` : "automatic"),
               undo, this.message));
  }

  /** "pair…" / "split" for a row of `compare/operator` (by name) or `compare/operator_pairs` (per instance). */
  rowAction(ctx: ViewCtx, perInstance: boolean, r: Row): HTMLElement | null {
    const status = r.status;
    const name = String((perInstance ? r.b_name : r.name) ?? "");
    if (status === "baseline_only" && name) {
      return h("button", {class: "btn small match-btn", type: "button", "data-role": "pair", "data-name": name,
                          title: "Pair this operator with a target-only one (saved in the name map)",
                          onClick: (ev: Event) => this.openPicker(ctx, name, ev.currentTarget as HTMLElement)}, "pair…");
    }
    if (status !== "both") return null;
    let b = "", t = "";
    if (perInstance) {
      b = String(r.b_name ?? "");
      t = String(r.t_name ?? "");
    } else {
      const parts = String(r.name ?? "").split(PAIR_SEP);
      if (parts.length === 2) [b, t] = parts;
      else b = t = String(r.name ?? "");
    }
    if (!b || !t) return null;
    const same = b === t;
    return h("button", {class: "btn small match-btn", type: "button", "data-role": "split", disabled: same,
                        title: same ? `${IDENTICAL}.` : `Split ${b} from ${t} (saved in the name map)`,
                        onClick: () => void this.edit("split", b, t)}, "split");
  }

  /** The candidate list under the row's button: search box, ranked target-only operators. */
  private openPicker(ctx: ViewCtx, bName: string, anchor: HTMLElement): void {
    document.querySelectorAll(".match-pop").forEach((x) => x.remove());
    const search = h("input", {type: "search", placeholder: "filter target operators…", "data-role": "candidate-filter",
                               "aria-label": "Filter the candidate target operators", style: {width: "100%"}}) as HTMLInputElement;
    const list = h("ul", {class: "candidates", "data-role": "candidates", role: "listbox", "aria-label": `Candidates for ${bName}`});
    const info = h("div", {class: "muted"}, "Loading candidates…");
    const close = h("button", {class: "btn small", type: "button", "aria-label": "Close", onClick: () => pop.remove()}, "✕");
    const pop: HTMLElement = h("div", {class: "match-pop", role: "dialog", "aria-label": `Pair ${bName}`},
      h("div", {class: "pop-head"}, h("b", null, "Pair "), h("span", {class: "mono"}, bName), h("span", {class: "grow"}), close),
      search, info, list);
    pop.addEventListener("keydown", (ev: KeyboardEvent) => { if (ev.key === "Escape") pop.remove(); });
    // fixed under the button (the table's wrapper would clip it), kept inside the window
    const at = anchor.getBoundingClientRect();
    const width = Math.min(560, window.innerWidth - 16);
    pop.style.left = `${Math.max(8, Math.min(at.left, window.innerWidth - width - 8))}px`;
    pop.style.width = `${width}px`;
    const below = window.innerHeight - at.bottom;
    if (below >= 220 || below >= at.top) {
      pop.style.top = `${at.bottom + 4}px`;
      pop.style.maxHeight = `${Math.max(160, below - 12)}px`;
    } else {
      pop.style.bottom = `${window.innerHeight - at.top + 4}px`;
      pop.style.maxHeight = `${Math.max(160, at.top - 12)}px`;
    }
    document.body.append(pop);
    const away = (ev: Event) => {
      if (!pop.isConnected) document.removeEventListener("mousedown", away, true);
      else if (!pop.contains(ev.target as Node) && ev.target !== anchor) {
        pop.remove();
        document.removeEventListener("mousedown", away, true);
      }
    };
    document.addEventListener("mousedown", away, true);
    const gone = () => { if (!anchor.isConnected) pop.remove(); };
    window.addEventListener("scroll", gone, {capture: true, once: true});
    let seq = 0;
    const load = async (q: string) => {
      const my = ++seq;
      const u = url("compare/match_candidates", {...pairParams(ctx.base, ctx.target, ctx.compat, ctx.perStep), name: bName, q, limit: 40});
      try {
        const r = await fetchReady<Candidates>(u, () => my === seq && pop.isConnected, () => undefined);
        if (my !== seq) return;
        const b = r.baseline;
        info.textContent = `${r.total} target-only operator${r.total === 1 ? "" : "s"}${q ? ` matching “${q}”` : ""}` +
          (b ? `; this one: ${b.count} call${b.count === 1 ? "" : "s"}, ${fmtNum(b.device_ms)} ms${b.shape ? `, shapes ${b.shape}` : ""}` : "");
        replace(list, ...r.candidates.map((c) => h("li", null,
          h("button", {class: "cand", type: "button", role: "option", "data-name": c.name,
                       title: `score ${c.score.toFixed(2)} (name ${c.name_score.toFixed(2)}, shapes ${c.shape_score.toFixed(2)}, time ${c.time_score.toFixed(2)})`,
                       onClick: () => { pop.remove(); void this.edit("pair", bName, c.name); }},
            h("span", {class: "mono"}, c.name), " ",
            h("span", {class: "muted"}, `${c.count}×, ${fmtNum(c.device_ms)} ms${c.shape ? `, ${c.shape}` : ""} · ${Math.round(c.score * 100)}%`)))));
      } catch (e) {
        if (e instanceof Stale || my !== seq) return;
        info.textContent = `Could not list candidates: ${(e as Error).message}`;
      }
    };
    let timer = 0;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = window.setTimeout(() => void load(search.value.trim()), 250);
    });
    void load("");
    search.focus();
  }
}
