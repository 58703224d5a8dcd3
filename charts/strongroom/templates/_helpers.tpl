{{- define "strongroom.name" -}}{{ .Release.Name }}-strongroom{{- end -}}

{{- define "strongroom.labels" -}}
app.kubernetes.io/name: strongroom
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "strongroom.selector" -}}
app.kubernetes.io/name: strongroom
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "strongroom.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- /* The environment every Strongroom process gets: settings and the secrets by name. */ -}}
{{- define "strongroom.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "strongroom.name" . }}
env:
  - name: STRONGROOM_DATABASE_URL
    valueFrom: {secretKeyRef: {name: {{ .Values.secrets.database }}, key: url}}
  - name: STRONGROOM_REDIS_URL
    valueFrom: {secretKeyRef: {name: {{ .Values.secrets.redis }}, key: url}}
  - name: STRONGROOM_KEY_PEPPER
    valueFrom: {secretKeyRef: {name: {{ .Values.secrets.app }}, key: key-pepper}}
  - name: STRONGROOM_SECRET_KEY
    valueFrom: {secretKeyRef: {name: {{ .Values.secrets.app }}, key: secret-key}}
  {{- if .Values.secrets.signingKeys }}
  - name: STRONGROOM_OAUTH_SIGNING_KEYS_FILE
    value: /etc/strongroom/signing/jwks.json
  {{- end }}
{{- end -}}

{{- define "strongroom.securityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "strongroom.volumes" -}}
volumes:
  - name: tmp
    emptyDir: {}
  {{- if .Values.secrets.signingKeys }}
  - name: signing-keys
    secret: {secretName: {{ .Values.secrets.signingKeys }}}
  {{- end }}
{{- end -}}

{{- define "strongroom.volumeMounts" -}}
volumeMounts:
  - {name: tmp, mountPath: /tmp}
  {{- if .Values.secrets.signingKeys }}
  - {name: signing-keys, mountPath: /etc/strongroom/signing, readOnly: true}
  {{- end }}
{{- end -}}

{{- /* Blob storage (API and worker): a directory url is a path on a shared volume. */ -}}
{{- define "strongroom.storageIsS3" -}}
{{- if hasPrefix "s3://" .Values.storage.url }}true{{ end -}}
{{- end -}}

{{- define "strongroom.storageClaim" -}}
{{- if .Values.storage.volume.existingClaim -}}
{{ .Values.storage.volume.existingClaim }}
{{- else if .Values.storage.volume.create -}}
{{ include "strongroom.name" . }}-blobs
{{- else -}}
{{ fail "storage.url is a directory: set storage.volume.existingClaim or storage.volume.create, so that every API and worker pod sees the same files (or use an s3:// url)" }}
{{- end -}}
{{- end -}}

{{- /* Items appended to `env:` of the API and worker containers. */ -}}
{{- define "strongroom.storageEnv" -}}
{{- if and (include "strongroom.storageIsS3" .) .Values.storage.s3.credentialsSecret }}
- name: STRONGROOM_S3_ACCESS_KEY_ID
  valueFrom: {secretKeyRef: {name: {{ .Values.storage.s3.credentialsSecret }}, key: access-key-id}}
- name: STRONGROOM_S3_SECRET_ACCESS_KEY
  valueFrom: {secretKeyRef: {name: {{ .Values.storage.s3.credentialsSecret }}, key: secret-access-key}}
{{- end }}
{{- end -}}

{{- /* The chat engine (API and worker): its settings are in the ConfigMap, its upstream's key
only ever in the Secret named here. */ -}}
{{- define "strongroom.chatIsOpenai" -}}
{{- if eq .Values.chat.engine "openai" }}true{{ end -}}
{{- end -}}

{{- /* Items appended to `env:` of the API and worker containers. */ -}}
{{- define "strongroom.chatEnv" -}}
{{- if and (include "strongroom.chatIsOpenai" .) .Values.chat.openai.apiKeySecret }}
- name: STRONGROOM_CHAT_OPENAI_API_KEY
  valueFrom: {secretKeyRef: {name: {{ .Values.chat.openai.apiKeySecret }}, key: api-key}}
{{- end }}
{{- if and (eq .Values.embeddings.provider "openai") .Values.embeddings.openai.apiKeySecret }}
- name: STRONGROOM_EMBEDDINGS_OPENAI_API_KEY
  valueFrom: {secretKeyRef: {name: {{ .Values.embeddings.openai.apiKeySecret }}, key: api-key}}
{{- end }}
{{- end -}}

{{- /* Upstream OpenID Connect sign-in: items appended to `env:` of the API container only.
Not in the ConfigMap: every process reads that, and one that had the issuer without the
client secret would refuse to start (the three settings go together). */ -}}
{{- define "strongroom.oidcEnv" -}}
{{- if .Values.oidc.issuer }}
- {name: STRONGROOM_OIDC_ISSUER, value: {{ .Values.oidc.issuer | quote }}}
- {name: STRONGROOM_OIDC_CLIENT_ID, value: {{ .Values.oidc.clientId | quote }}}
- name: STRONGROOM_OIDC_CLIENT_SECRET
  valueFrom: {secretKeyRef: {name: {{ .Values.oidc.secret }}, key: client-secret}}
{{- end }}
{{- end -}}

{{- /* Items appended to `volumeMounts:` and `volumes:` of the API and worker pods. */ -}}
{{- define "strongroom.storageMount" -}}
{{- if not (include "strongroom.storageIsS3" .) }}
- {name: blobs, mountPath: {{ .Values.storage.url }}}
{{- end }}
{{- end -}}

{{- define "strongroom.storageVolume" -}}
{{- if not (include "strongroom.storageIsS3" .) }}
- name: blobs
  persistentVolumeClaim: {claimName: {{ include "strongroom.storageClaim" . }}}
{{- end }}
{{- end -}}

{{- /* Development databases and Secrets run as hooks before the migration Job. */ -}}
{{- /* Dev databases and Secrets: made before the first install's migration Job, and left
alone by upgrades (a pre-upgrade hook would recreate them: an empty database, a new pepper
that no issued key matches, mid-upgrade). A new install replaces them. */ -}}
{{- define "strongroom.devHook" -}}
annotations:
  helm.sh/hook: pre-install
  helm.sh/hook-weight: "-10"
  helm.sh/hook-delete-policy: before-hook-creation
{{- end -}}

{{- /* PostgreSQL connections (docs/deploy.md, "Database connections", issue 52): every pool of
every process is bounded, and the release's most at once must fit `database.maxConnections`
less `database.reservedConnections`. */ -}}
{{- define "strongroom.apiProcessConnections" -}}
{{- $perProcess := div (int .Values.api.databaseConnections) (int .Values.api.workers) }}
{{- if lt (int $perProcess) 3 }}
{{- fail (printf "api.databaseConnections (%d) gives each of the %d API processes %d connections, fewer than the 3 one needs (its queue, its pool, its read pool)" (int .Values.api.databaseConnections) (int .Values.api.workers) (int $perProcess)) }}
{{- end }}
{{- $perProcess }}
{{- end -}}

{{- /* Items appended to `env:` of the API container: one process's pools. */ -}}
{{- define "strongroom.apiPoolEnv" -}}
{{- $rest := sub (int (include "strongroom.apiProcessConnections" .)) 1 }}
{{- $pool := max 1 (div (mul $rest 2) 3) }}
- {name: STRONGROOM_DATABASE_QUEUE_POOL_SIZE, value: "1"}
- {name: STRONGROOM_DATABASE_POOL_SIZE, value: {{ $pool | quote }}}
- {name: STRONGROOM_DATABASE_READ_POOL_SIZE, value: {{ sub $rest $pool | quote }}}
{{- end -}}

{{- /* Items appended to `env:` of the worker container: its two queue pools of 2 and the
connection that listens for jobs take 5; its pool and read pool share the rest. */ -}}
{{- define "strongroom.workerPoolEnv" -}}
{{- $rest := sub (int .Values.worker.databaseConnections) 5 }}
{{- $pool := max 1 (div (mul $rest 2) 3) }}
- {name: STRONGROOM_DATABASE_QUEUE_POOL_SIZE, value: "2"}
- {name: STRONGROOM_DATABASE_POOL_SIZE, value: {{ $pool | quote }}}
- {name: STRONGROOM_DATABASE_READ_POOL_SIZE, value: {{ sub $rest $pool | quote }}}
{{- end -}}

{{- /* Items appended to `env:` of the operator container: 4 connections a replica. */ -}}
{{- define "strongroom.operatorPoolEnv" -}}
- {name: STRONGROOM_DATABASE_QUEUE_POOL_SIZE, value: "1"}
- {name: STRONGROOM_DATABASE_POOL_SIZE, value: "2"}
- {name: STRONGROOM_DATABASE_READ_POOL_SIZE, value: "1"}
{{- end -}}

{{- /* The most connections the release may hold at once; fails over the budget. The API at
its autoscaler's maxReplicas (or `replicas`) plus the one new pod of a rollout (maxSurge 1);
the workers and the operator replaced without a surge (Recreate; peering: one at a time,
maxSurge 0); the migration Job's one. */ -}}
{{- define "strongroom.databaseConnections" -}}
{{- $apiPods := int .Values.api.replicas }}
{{- if .Values.api.autoscaling.enabled }}{{ $apiPods = int .Values.api.autoscaling.maxReplicas }}{{ end }}
{{- $perApiPod := mul (int (include "strongroom.apiProcessConnections" .)) (int .Values.api.workers) }}
{{- $total := mul (add1 $apiPods) $perApiPod }}
{{- if .Values.worker.enabled }}{{ $total = add $total (mul (int .Values.worker.replicas) (int .Values.worker.databaseConnections)) }}{{ end }}
{{- if .Values.operator.enabled }}{{ $total = add $total (mul (int .Values.operator.replicas) 4) }}{{ end }}
{{- if .Values.migrations.enabled }}{{ $total = add $total 1 }}{{ end }}
{{- $budget := sub (int .Values.database.maxConnections) (int .Values.database.reservedConnections) }}
{{- if gt (int $total) (int $budget) }}
{{- fail (printf "the release may open %d PostgreSQL connections at once (%d API pods at most, a rollout's one more, of %d each; %d worker pods of %d; %d operator replicas of 4; the migration Job's 1), more than database.maxConnections (%d) less database.reservedConnections (%d): lower api.autoscaling.maxReplicas, api.databaseConnections, worker.replicas or worker.databaseConnections, or raise PostgreSQL's max_connections and database.maxConnections with it (docs/deploy.md, \"Database connections\")" (int $total) $apiPods (int $perApiPod) (int .Values.worker.replicas) (int .Values.worker.databaseConnections) (int .Values.operator.replicas) (int .Values.database.maxConnections) (int .Values.database.reservedConnections)) }}
{{- end }}
{{- $total }}
{{- end -}}
