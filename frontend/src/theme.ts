/**
 * Light or dark: follow the host. Inside TensorBoard the tab is a same-origin iframe of the
 * TensorBoard page, which puts a `dark-mode` class on its <body> when its dark theme is on
 * (its settings, or the browser's preference); we watch that class. Standalone, or when the
 * parent page cannot be read (another origin), the browser's prefers-color-scheme decides.
 * The theme is a `dark` class on our <html>; styles.ts holds the colours of both.
 */

function hostBody(): HTMLElement | null {
  try {
    if (window.parent === window) return null;
    const b = window.parent.document.body;
    return b ?? null;
  } catch {
    return null;                      // another origin: the host page cannot be read
  }
}

function apply(dark: boolean): void {
  const el = document.documentElement;
  el.classList.toggle("dark", dark);
  el.style.colorScheme = dark ? "dark" : "light";
}

/** Start following the host's theme (once). */
export function followTheme(): void {
  const media = window.matchMedia?.("(prefers-color-scheme: dark)");
  const body = hostBody();
  if (body) {
    const sync = () => apply(body.classList.contains("dark-mode"));
    sync();
    new MutationObserver(sync).observe(body, {attributes: true, attributeFilter: ["class"]});
    return;
  }
  const sync = () => apply(!!media?.matches);
  sync();
  media?.addEventListener?.("change", sync);
}
