"""The OAuth 2.1 authorization server (spec 2.3, 2.4, 5.3; D29-D40) and the verification of
its access tokens by the API."""
