/** Add `listener` to `list`; the function returned takes it out again (once; later calls do nothing). */
export function subscribe<T>(list: T[], listener: T): () => void {
  list.push(listener);
  return () => {
    const at = list.indexOf(listener);
    if (at >= 0) list.splice(at, 1);
  };
}
