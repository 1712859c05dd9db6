/** Entry point loaded by TensorBoard's plugin_entry.html: `import("./static/index.js").then(m => m.render())`. */
import {App} from "./app";
import {injectStyles} from "./styles";
import {followTheme} from "./theme";

let app: App | null = null;

export async function render(): Promise<void> {
  if (app) return;
  injectStyles();
  followTheme();
  app = new App();
  (window as unknown as {profileCompare?: App}).profileCompare = app;
  await app.start();
}
