/** HTTP client for the plugin routes: relative URLs only, JSON errors, 202 "loading" polling. */
import {sleep} from "./dom";

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

/** Thrown when a newer request made this one pointless (the user moved on). */
export class Stale extends Error {
  constructor() {
    super("stale");
  }
}

export interface Loading {
  loading: true;
  progress: number | null;
  message: string;
}

async function parse(resp: Response): Promise<unknown> {
  const text = await resp.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorText(resp: Response, body: unknown): string {
  if (body && typeof body === "object" && "error" in body && (body as {error: unknown}).error) {
    return String((body as {error: unknown}).error);
  }
  if (typeof body === "string" && body.trim() && body.length < 400 && !body.includes("<")) return body.trim();
  return `${resp.status} ${resp.statusText || "error"}`;
}

/**
 * The requests of the content shown now. Drawing other content (another view, pair or name map)
 * aborts them: their answers are of no use, they would hold the browser's few connections, and
 * one naming a name map that Undo has just removed would be answered 400.
 */
let shown = new AbortController();

export function abortShown(): void {
  shown.abort();
  shown = new AbortController();
}

function aborted(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}

/** GET a JSON route: the body, a Loading marker for 202, or an ApiError (Stale when `signal` aborted it). */
export async function getJSON<T>(url: string, signal?: AbortSignal): Promise<T | Loading> {
  let resp: Response;
  try {
    resp = await fetch(url, {headers: {Accept: "application/json"}, cache: "no-store", signal});
  } catch (e) {
    if (aborted(e)) throw new Stale();
    throw new ApiError(0, `network error: ${(e as Error).message || e}`);
  }
  const body = await parse(resp);
  if (resp.status === 202) {
    const b = (body && typeof body === "object" ? body : {}) as {progress?: unknown; error?: unknown};
    return {loading: true, progress: typeof b.progress === "number" ? b.progress : null,
            message: typeof b.error === "string" ? b.error : "working…"};
  }
  if (!resp.ok) throw new ApiError(resp.status, errorText(resp, body));
  return body as T;
}

export async function postJSON<T>(url: string, payload: unknown): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                             body: JSON.stringify(payload)});
  } catch (e) {
    throw new ApiError(0, `network error: ${(e as Error).message || e}`);
  }
  const body = await parse(resp);
  if (!resp.ok) throw new ApiError(resp.status, errorText(resp, body));
  return body as T;
}

/** The signal of the content shown now, for a view's own polling loop. */
export function shownSignal(): AbortSignal {
  return shown.signal;
}

export function isLoading(x: unknown): x is Loading {
  return !!x && typeof x === "object" && (x as Loading).loading === true;
}

/** Build "compare/<route>?a=..&b=.." skipping empty parameters. */
export function url(route: string, params: Record<string, string | number | boolean | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === "" || v === false) continue;
    q.set(k, v === true ? "1" : String(v));
  }
  const qs = q.toString();
  return qs ? `${route}?${qs}` : route;
}

/** Small response cache (compare answers only change on reload). */
const cache = new Map<string, unknown>();
const CACHE_MAX = 60;

export function clearCache(): void {
  cache.clear();
}

/**
 * GET until the answer is ready: 202 answers call onProgress and are polled again
 * (backing off to 2 s). `alive()` going false, or the content it was asked for being replaced
 * (`abortShown`), aborts with Stale.
 */
export async function fetchReady<T>(u: string, alive: () => boolean,
                                    onProgress: (l: Loading) => void): Promise<T> {
  if (cache.has(u)) return cache.get(u) as T;
  const signal = shownSignal();
  let wait = 400;
  for (;;) {
    if (!alive()) throw new Stale();
    const r = await getJSON<T>(u, signal);
    if (!alive()) throw new Stale();
    if (!isLoading(r)) {
      cache.set(u, r);
      if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
      return r;
    }
    onProgress(r);
    await sleep(wait);
    wait = Math.min(2000, wait * 1.5);
  }
}

/**
 * POST a JSON body to a route that computes (`cluster`): 202 answers call onProgress and the
 * same POST is sent again (joining the server's job, backing off to 2 s); the answer is cached
 * like fetchReady's. `alive()` going false aborts with Stale.
 */
export async function postReady<T>(route: string, payload: Record<string, unknown>, alive: () => boolean,
                                   onProgress: (l: Loading) => void): Promise<T> {
  const key = `POST ${route} ${JSON.stringify(payload)}`;
  if (cache.has(key)) return cache.get(key) as T;
  const signal = shownSignal();
  let wait = 400;
  for (;;) {
    if (!alive()) throw new Stale();
    let resp: Response;
    try {
      resp = await fetch(route, {method: "POST", headers: {"Content-Type": "application/json", Accept: "application/json"},
                                 body: JSON.stringify(payload), cache: "no-store", signal});
    } catch (e) {
      if (aborted(e)) throw new Stale();
      throw new ApiError(0, `network error: ${(e as Error).message || e}`);
    }
    const body = await parse(resp);
    if (!alive()) throw new Stale();
    if (resp.status !== 202) {
      if (!resp.ok) throw new ApiError(resp.status, errorText(resp, body));
      cache.set(key, body);
      if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
      return body as T;
    }
    const b = (body && typeof body === "object" ? body : {}) as {progress?: unknown; error?: unknown};
    onProgress({loading: true, progress: typeof b.progress === "number" ? b.progress : null,
                message: typeof b.error === "string" ? b.error : "working…"});
    await sleep(wait);
    wait = Math.min(2000, wait * 1.5);
  }
}
