/**
 * A thread for the registry's unit test: over the shared bounds it is given, asks for every value
 * in the order given once told to go (after saying it is ready), and answers with those admitted.
 */
import { Bounds } from "../../src/metrics/bounds.ts";

const scope = self as unknown as {
  postMessage(message: string[] | "ready"): void;
  onmessage: ((event: MessageEvent) => void) | null;
};

scope.onmessage = ({ data }: MessageEvent) => {
  const { buffer, max, values, go } = data as {
    buffer: SharedArrayBuffer;
    max: number;
    values: string[];
    go: SharedArrayBuffer;
  };
  const bounds = new Bounds([], [max], buffer);
  // Every thread starts at once: wait until the test lets them go.
  scope.postMessage("ready");
  const start = new Int32Array(go);
  while (Atomics.load(start, 0) === 0) Atomics.wait(start, 0, 0, 1);
  scope.postMessage(values.filter((value) => bounds.admit(0, value)));
};
