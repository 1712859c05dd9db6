/**
 * Call stacks and jump-to-source. A stack is a string of frames separated by ";" or newlines,
 * each like "/path/file.py(123): fn". Inside VSCode each frame becomes a button that posts
 * {filename, line} to window.parent.parent (plugin iframe → TensorBoard page → webview),
 * which opens the file there; elsewhere frames are plain text.
 */
import {h} from "./dom";

export interface Frame {
  text: string;
  file: string | null;
  line: number | null;
  fn: string;
}

const FRAME_RE = /^(.*?)\((\d+)\)\s*:?\s*(.*)$/;

export function parseStack(stack: string): Frame[] {
  return stack.split(/;|\r?\n/).map((t) => t.trim()).filter(Boolean).map((text) => {
    const m = FRAME_RE.exec(text);
    if (m && /[\\/]|\.py\b/.test(m[1])) return {text, file: m[1].trim(), line: Number(m[2]), fn: m[3]};
    return {text, file: null, line: null, fn: text};
  });
}

export function isStackKey(key: string): boolean {
  return key === "call_stack" || key.endsWith("_call_stack");
}

/** The webview's origin when the browser tells us (Chromium's ancestorOrigins), else "*". */
function webviewOrigin(): string {
  try {
    const ao = window.location.ancestorOrigins;
    if (ao && ao.length >= 2 && ao[1] && ao[1] !== "null") return ao[1];
  } catch {
    /* not available */
  }
  return "*";
}

/** Ask VSCode to open file:line. The line is sent 1-based as written in the stack (must be truthy). */
export function jumpToSource(file: string, line: number): void {
  const target = window.parent?.parent;
  if (!target || target === window) return;
  target.postMessage({filename: file, line: Math.max(1, line)}, webviewOrigin());
}

export function stackList(stack: string, jump: boolean): HTMLElement {
  const frames = parseStack(stack);
  return h("ol", {class: "stack"}, ...frames.map((f) => {
    if (jump && f.file && f.line) {
      const file = f.file, line = f.line;
      return h("li", null, h("button", {class: "linkish", type: "button", title: `Open ${file}:${line} in the editor`,
                                        onClick: () => jumpToSource(file, line)}, f.text));
    }
    return h("li", null, f.text);
  }));
}
