/** How a request proved who it acts for: the names the context, the metrics and the traces share. */
export type AuthMethod = 'password' | 'api-key' | 'oauth' | 'none'
