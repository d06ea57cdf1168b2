/** `work`, or a rejection with `message` once `ms` have passed (the work itself goes on, unheard). */
export function beforeDeadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | null = null;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, late]).finally(() => {
    if (timer !== null) clearTimeout(timer);
  });
}
