/**
 * open-data-gate: the access layer of a public open data platform (application tokens,
 * throttling, HTTP Basic and API keys, OAuth 2.0) for any Node HTTP service.
 *
 * This entry point is the framework-agnostic core. Mount it with
 * `open-data-gate/express`, `open-data-gate/koa` or `open-data-gate/node`.
 *
 * @module open-data-gate
 */
export { createGate, Gate, type GateContext, type GateOutcome } from './gate.js'
export type { GateOptions, RatePolicyOptions, AnonymousPolicyOptions, ThrottleOptions, StoreFailureMode } from './config/options.js'
export type { LimitOptions } from './config/plans.js'
export type { LocalCountingOptions } from './config/local-counting.js'
export type { Application, RegisterApplication, UpdateApplication, RegisteredApplication, Applications } from './management/applications.js'
export type { RotateSecretOptions } from './management/secret-rotation.js'
export type { SuspendApplicationOptions, ApplicationSuspension } from './management/application-suspension.js'
export type { User, CreateUser, UpdateUser, SignIn, Users } from './management/users.js'
export type { ApiKey, IssuedApiKey, ApiKeys, CreateApiKey } from './management/api-keys.js'
export type { IssueAccessToken, IssuedAccessToken, AccessTokens } from './management/access-tokens.js'
export type { ConnectedApp, Grants } from './management/grants.js'
export type { ApiKeyJson } from './endpoints/api-keys.js'
export type { AuthMethod, GateUser } from './pipeline/authenticate.js'
export type { GuardRule, Guard } from './pipeline/guard.js'
export type { BasicOptions, OAuthOptions, ApiKeyEndpointOptions, ConnectedAppsOptions, ApplicationOptions, SelfServiceBudgetOption } from './config/options.js'
export type { OAuthPaths, CurrentUserOptions } from './config/endpoint-paths.js'
export type { OAuthPages, LoginView, ConsentView, ErrorView, RegisteredBy } from './config/pages-option.js'
export type { ScryptParams } from './secrets/passwords.js'
export type { HashQueueLimits } from './secrets/hash-queue.js'
export type { ThrottleInfo } from './pipeline/throttle.js'
export type { DecisionLimit } from './rules/decision.js'
export type { TrustProxyOption, ProxyHeadersOption } from './http/proxy.js'
export type { RequestIdOptions } from './http/request-id.js'
export type { GateLogger, GateLogFields } from './log/logger.js'
export type { GateRequest, GateResponse, RequestBody, HeaderValue } from './http/request.js'
export { authorizationLines } from './http/request.js'
export type { MetricsOptions, MeterProviderLike, MeterLike, CounterLike, HistogramLike, InstrumentOptions, MetricAttributes, DecisionOutcome, DecisionPolicy, StoreKind } from './telemetry/metrics.js'
export type { StoreErrorType } from './store/guarded-store.js'
export { HANDLE_CHANNEL, STORE_CHANNEL, type HandleMessage, type StoreCallMessage, type GateDecision } from './telemetry/tracing.js'
export type {
  GateEvents,
  ThrottledEvent,
  InvalidAppTokenEvent,
  StoreErrorEvent,
  StoreRecoveredEvent,
  RateKeyEvictedEvent,
  AuthenticationFailedEvent,
  TokenRevokedEvent,
  ApiKeyRevokedEvent,
  ClientSecretExposedEvent,
  CodeReplayedEvent,
  ApplicationSuspendedEvent,
  ApplicationResumedEvent,
  InternalErrorEvent,
  FailedRequest,
} from './events.js'
export {
  GateError,
  PlatformError,
  OAuthError,
  ThrottledError,
  StoreError,
  StoreDataError,
  NotFoundError,
  PLATFORM_ERROR_STATUS,
  OAUTH_ERROR_STATUS,
  statusOf,
  type GateErrorCode,
  type PlatformErrorCode,
  type OAuthErrorCode,
} from './errors.js'
export { MemoryStore, type MemoryStoreOptions } from './store/memory/store.js'
export { inspectStoreUrl, type StoreUrl } from './store/connection-url.js'
export type {
  GateStore,
  PartialGateStore,
  ApplicationStore,
  RateStore,
  UserStore,
  ApiKeyStore,
  OAuthStore,
  StoreLifecycle,
  ApplicationRecord,
  ApplicationPatch,
  ApplicationLimits,
  ApplicationInsertResult,
  ApplicationFilter,
  UserRecord,
  UserPatch,
  ApiKeyRecord,
  ApiKeyPatch,
  AccessTokenRecord,
  AccessTokenFilter,
  AuthorizationCodeRecord,
  SessionRecord,
  GrantRecord,
  ApiKeyQuery,
  ApiKeyLimits,
  ApiKeyInsertResult,
  ApiKeySortField,
  StoreEventSink,
  Awaitable,
} from './store/store.js'
export type { StoreSlice } from './store/slices.js'
// Named by public signatures (GateStore.lookupRequest, MeterLike, Applications): exported so a
// store, a meter or a caller can name them, and the API reference can show them.
export type { RequestLookupStore, RequestLookup, RequestLookupResult, CredentialLookup, RateStep, RateStepLookup, LimitsLookup } from './store/store.js'
export type { ObservableLike, ObservableResultLike } from './telemetry/metrics.js'
export type { RegisterOwnApplication, ListApplications } from './management/applications.js'
export type { GateUsage, UsageQuery, UsageSeries, UsageTopOptions, UsageTopEntry } from './usage/usage.js'
export type { UsageOptions, UsageRetentionOptions } from './usage/options.js'
export type { NearLimitOptions } from './usage/near-limit.js'
export type { NearLimit } from './usage/near-limit-state.js'
export type { WebhookOptions } from './usage/webhook.js'
export type { NearLimitEvent, UsageDroppedEvent, UsageFlushFailedEvent } from './usage/events.js'
export type { UsageStore, UsageBatch, UsageRow, UsageBucket, UsageCounts, UsageStatuses, UsageGranularity, UsageTopQuery, UsageTotal } from './store/usage-contract.js'
export { addShadowCounts, MAX_SHADOW_NAMES } from './store/usage-contract.js'
export { compareApiKeys, matchesApiKeyQuery } from './store/api-key-query.js'
export { gcraStep, emissionInterval, type RateResult, type GcraOutcome } from './limits/gcra.js'
export { limitsStep, quotaStep, QUOTA_KEEP_MS, type LimitStep, type RateLimitStep, type QuotaLimitStep, type LimitResult, type LimitState, type LimitsOutcome, type QuotaCounter, type QuotaOutcome } from './limits/limit-steps.js'
export { periodBounds, type CalendarPeriod, type PeriodBounds } from './limits/calendar-period.js'
export { limitRateKey } from './limits/rate-keys.js'
/** For authors of adapters: the check every mount makes that it was given a gate. */
export { assertGate } from './gate-argument.js'
