/**
 * An evidence url: a link opening in a new tab, sharing nothing with the
 * page (no opener, no referrer). Only http(s) urls are links; anything else
 * (a javascript: url planted in evidence) is shown as text.
 */
export function ExternalLink({ url }: { readonly url: string }) {
  if (!/^https?:\/\//i.test(url)) return <span>{url}</span>;
  return (
    <a href={url} target="_blank" rel="noopener noreferrer">
      {url}
    </a>
  );
}
