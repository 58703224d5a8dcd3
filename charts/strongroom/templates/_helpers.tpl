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

{{- /* Development databases and Secrets run as hooks before the migration Job. */ -}}
{{- define "strongroom.devHook" -}}
annotations:
  helm.sh/hook: pre-install,pre-upgrade
  helm.sh/hook-weight: "-10"
  helm.sh/hook-delete-policy: before-hook-creation
{{- end -}}
