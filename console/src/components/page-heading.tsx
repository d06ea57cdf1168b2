import { useEffect } from 'preact/hooks';

/** A page's heading: focusable, so the shell can move focus to it after a navigation; it also names the document. */
export function PageHeading({ title }: { readonly title: string }) {
  useEffect(() => {
    document.title = `${title} · upi-risk console`;
  }, [title]);
  return <h1 tabIndex={-1}>{title}</h1>;
}
