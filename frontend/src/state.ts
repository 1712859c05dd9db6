/**
 * The UI state and its home in the TensorBoard page's URL hash
 * (`#profile_compare&p.profile_compare.b=...`), so a comparison can be shared and survives reload.
 * GetURLPluginData is unreliable (see the plugin notes), so the parent's hash is read directly.
 * Which view names exist comes from the view registry.
 */
import {homeView, viewDef} from "./registry";

export const PLUGIN = "profile_compare";
const PREFIX = `p.${PLUGIN}.`;

/** A registered view's name (registry.ts). */
export type ViewName = string;

export interface SideSel {
  worker: string;
  step: number | null;
}

export interface TableQuery {
  sub: string;               // a view's variant, e.g. "pairs" (operator: per instance instead of by name)
  sort: string;
  order: "asc" | "desc" | "";
  q: string;
  minDiff: string;
  offset: number;
  limit: number;
}

export interface State {
  base: SideSel | null;
  target: SideSel | null;
  view: ViewName;
  perStep: boolean | null;   // null: the server's default
  compat: boolean;           // reference figures (msprof-analyze compatible), `reference_compat=1`
  nameMap: string;           // the match editor's saved operator name map, `name_map=<name>` ("" none)
  tables: Partial<Record<ViewName, TableQuery>>;
}

export const DEFAULT_LIMIT = 50;

/** Rows per page when the user has not chosen: the view's own (the module tree reads best whole). */
export function defaultLimit(view: ViewName | null | undefined): number {
  return viewDef(view)?.limit ?? DEFAULT_LIMIT;
}

export function defaultQuery(view?: ViewName): TableQuery {
  return {sub: "", sort: "", order: "", q: "", minDiff: "", offset: 0, limit: defaultLimit(view)};
}

export function initialState(): State {
  return {base: null, target: null, view: homeView(), perStep: null, compat: false, nameMap: "", tables: {}};
}

export function runOf(workerId: string): string {
  const i = workerId.lastIndexOf("/");
  return i < 0 ? workerId : workerId.slice(0, i);
}

export function workerName(workerId: string): string {
  return workerId.slice(workerId.lastIndexOf("/") + 1);
}

/** The TensorBoard page window, when we may touch it (same origin). */
function host(): Window | null {
  try {
    if (window.parent !== window && window.parent.location.href) return window.parent;
  } catch {
    /* cross-origin parent */
  }
  return null;
}

function parseHash(hash: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of hash.replace(/^#/, "").split("&")) {
    if (!part) continue;
    const i = part.indexOf("=");
    if (i < 0) out.push(["", part]);
    else {
      try {
        out.push([decodeURIComponent(part.slice(0, i)), decodeURIComponent(part.slice(i + 1))]);
      } catch {
        /* malformed part: ignore */
      }
    }
  }
  return out;
}

function intOrNull(v: string | undefined): number | null {
  if (v === undefined || v === "") return null;
  const n = Number(v);
  return Number.isInteger(n) ? n : null;
}

/** Our keys from the hash (without prefix). */
function ourKeys(hash: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const [k, v] of parseHash(hash)) if (k.startsWith(PREFIX)) m.set(k.slice(PREFIX.length), v);
  return m;
}

export function currentHash(): string {
  const w = host();
  return w ? w.location.hash : window.location.hash;
}

/** The hash's tab name ("" when none). */
export function hashTab(hash: string): string {
  const first = parseHash(hash).find(([k]) => k === "");
  return first ? first[1] : "";
}

export function stateFromHash(hash: string): State {
  const k = ourKeys(hash);
  const st = initialState();
  const b = k.get("b"), t = k.get("t");
  if (b) st.base = {worker: b, step: intOrNull(k.get("bs"))};
  if (t) st.target = {worker: t, step: intOrNull(k.get("ts"))};
  const v = k.get("v") as ViewName | undefined;
  if (v && viewDef(v)) st.view = v;
  const ps = k.get("ps");
  st.perStep = ps === "1" ? true : ps === "0" ? false : null;
  st.compat = k.get("rc") === "1";
  st.nameMap = k.get("nm") ?? "";
  if (st.view !== homeView()) {
    const q = defaultQuery(st.view);
    q.sub = k.get("m") ?? "";
    q.sort = k.get("s") ?? "";
    const o = k.get("o");
    q.order = o === "asc" || o === "desc" ? o : "";
    q.q = k.get("q") ?? "";
    q.minDiff = k.get("md") ?? "";
    q.offset = Math.max(0, intOrNull(k.get("off")) ?? 0);
    q.limit = Math.min(1000, Math.max(1, intOrNull(k.get("n")) ?? defaultLimit(st.view)));
    st.tables[st.view] = q;
  }
  return st;
}

function stateKeys(st: State): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const add = (k: string, v: string | number | null | undefined) => {
    if (v !== null && v !== undefined && v !== "") out.push([k, String(v)]);
  };
  add("b", st.base?.worker);
  add("bs", st.base?.step);
  add("t", st.target?.worker);
  add("ts", st.target?.step);
  if (st.view !== homeView()) add("v", st.view);
  if (st.perStep !== null) add("ps", st.perStep ? 1 : 0);
  if (st.compat) add("rc", 1);
  add("nm", st.nameMap);
  const q = st.tables[st.view];
  if (q && st.view !== homeView()) {
    add("m", q.sub);
    add("s", q.sort);
    add("o", q.order);
    add("q", q.q);
    add("md", q.minDiff);
    if (q.offset) add("off", q.offset);
    if (q.limit !== defaultLimit(st.view)) add("n", q.limit);
  }
  return out;
}

const enc = (s: string) => encodeURIComponent(s).replace(/%2F/g, "/");

/** The hash with our keys replaced by the state's; other keys and the tab name kept. */
export function hashFor(st: State, hash: string): string {
  const parts = parseHash(hash).filter(([k]) => !k.startsWith(PREFIX));
  if (!parts.some(([k]) => k === "")) parts.unshift(["", PLUGIN]);
  const kept = parts.map(([k, v]) => (k === "" ? enc(v) : `${enc(k)}=${enc(v)}`));
  const ours = stateKeys(st).map(([k, v]) => `${enc(PREFIX + k)}=${enc(v)}`);
  return "#" + [...kept, ...ours].join("&");
}

/** Whether the hash already carries exactly this state. */
export function hashMatches(st: State, hash: string): boolean {
  const want = new Map(stateKeys(st));
  const have = ourKeys(hash);
  if (want.size !== have.size) return false;
  for (const [k, v] of want) if (have.get(k) !== v) return false;
  return true;
}

/** Write the state into the TensorBoard page's hash without adding history entries. */
export function writeHash(st: State): void {
  const w = host() ?? window;
  const cur = w.location.hash;
  const tab = hashTab(cur);
  if (tab && tab !== PLUGIN) return;            // another tab is showing: leave its URL alone
  if (hashMatches(st, cur)) return;
  const next = hashFor(st, cur);
  try {
    const u = new URL(w.location.href);
    u.hash = next;
    w.history.replaceState(w.history.state, "", u.toString());
  } catch {
    /* sandboxed history: keep the state in memory only */
  }
}

/** Call fn when the TensorBoard page's hash changes (user navigation, tab switches). */
export function watchHash(fn: (hash: string) => void): void {
  const w = host() ?? window;
  w.addEventListener("hashchange", () => fn(w.location.hash));
  w.addEventListener("popstate", () => fn(w.location.hash));
}
