/**
 * The TensorBoard shell channel: `experimental.bootstrap` hands the host a MessagePort, then
 * JSON strings {type, id, payload, error, isReply} flow both ways. We answer every host
 * message and act on `experimental.DataReloaded` (the reload button / auto-reload).
 */

interface Msg {
  type: string;
  id: number;
  payload: unknown;
  error: unknown;
  isReply: boolean;
}

export interface HostChannel {
  request(type: string, payload?: unknown): Promise<unknown>;
}

export function connectHost(onReload: () => void): HostChannel | null {
  if (window.parent === window || typeof MessageChannel === "undefined") return null;
  const ch = new MessageChannel();
  const port = ch.port1;
  let nextId = 0;
  const waits = new Map<number, {resolve: (v: unknown) => void; reject: (e: Error) => void}>();
  const send = (m: Msg) => port.postMessage(JSON.stringify(m));

  port.addEventListener("message", (ev: MessageEvent) => {
    let m: Msg;
    try {
      m = JSON.parse(String(ev.data)) as Msg;
    } catch {
      return;
    }
    if (m.isReply) {
      const w = waits.get(m.id);
      if (!w) return;
      waits.delete(m.id);
      if (m.error) w.reject(new Error(String(m.error)));
      else w.resolve(m.payload);
      return;
    }
    if (m.type === "experimental.DataReloaded") {
      try {
        onReload();
      } catch (e) {
        console.warn("profile_compare: reload handler failed", e);
      }
    }
    send({type: m.type, id: m.id, payload: null, error: null, isReply: true});
  });
  port.start();
  try {
    window.parent.postMessage("experimental.bootstrap", "*", [ch.port2]);
  } catch {
    return null;
  }
  return {
    request(type: string, payload: unknown = null): Promise<unknown> {
      const id = nextId++;
      send({type, id, payload, error: null, isReply: false});
      return new Promise((resolve, reject) => waits.set(id, {resolve, reject}));
    },
  };
}
