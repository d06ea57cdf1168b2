/**
 * The box a table scrolls in when it is wider (or, beside a cluster graph,
 * taller) than the room it has. A box that scrolls must be reachable by
 * keyboard to be scrolled by keyboard, so while its table overflows it is a
 * tab stop, a region named by the table's caption; when the table fits it is
 * a plain box and adds no stop.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export function TableWrap({ captionId, children }: { readonly captionId: string; readonly children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = box.current!;
    const update = () => {
      if (element.scrollWidth > element.clientWidth || element.scrollHeight > element.clientHeight) {
        element.tabIndex = 0;
        element.setAttribute('role', 'region');
        element.setAttribute('aria-labelledby', captionId);
      } else {
        element.removeAttribute('tabindex');
        element.removeAttribute('role');
        element.removeAttribute('aria-labelledby');
      }
    };
    // The box changes size with the window, the table with its rows.
    const observer = new ResizeObserver(update);
    observer.observe(element);
    for (const child of element.children) observer.observe(child);
    return () => observer.disconnect();
  }, [captionId]);

  return (
    <div class="table-wrap" ref={box}>
      {children}
    </div>
  );
}
