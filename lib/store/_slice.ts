/** The store's time slicing: the shared {@link TimeSlicer} of lib/process. @module */

export { SLICE_MS, TimeSlicer } from "../process/slice.ts";
