/** A failure, announced at once to assistive technology; nothing when there is none. */
export function ErrorMessage({ message }: { readonly message: string | null }) {
  if (message === null) return null;
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}
