"""The kopf operator: Tenant, ApiKey and OAuthClient custom resources reconciled into the
rows the API reads (one module per resource; the handlers call plain functions that are
testable without a cluster)."""
