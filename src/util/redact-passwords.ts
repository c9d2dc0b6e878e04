/**
 * `text` with the password of any URL in it (`scheme://user:password@`), any `password=`
 * keyword or query parameter struck out (up to the authority's last `@`: a password may
 * hold one): for a line made of a driver's error message, where no URL is at hand to
 * `StoreUrl.redact` by.
 */
export function redactPasswords(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/@:]*):[^\s/]*@/gi, '$1:***@')
    .replace(/\b([a-z_]*pass(?:word|wd)?)(\s*[=:]\s*)(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|[^\s&;,]+)/gi, '$1$2***')
}
