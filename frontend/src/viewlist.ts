/**
 * The tab's views, in tab order: one registration line per view. A new view is its own
 * module exporting a `ViewDef` (registry.ts) plus one line here.
 */
import {communicationView} from "./commview";
import {memoryView} from "./memview";
import {overviewView} from "./overviewview";
import {registerView} from "./registry";
import {apiView, kernelView, moduleView, operatorView} from "./tableviews";

registerView(overviewView);
registerView(operatorView);
registerView(moduleView);
registerView(kernelView);
registerView(apiView);
registerView(communicationView);
registerView(memoryView);
