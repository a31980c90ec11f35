{{/* Resource names: <release>-svc, or the release name when it already says svc. */}}
{{- define "svc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The services: name (the image's command, and the component label), the key
of their values, and the route prefix the Ingress sends to them, if any: the
routing table of libs/openapi/src/routes.ts (ROUTES), which tools/deploy's
static checks hold this equal to by routing every path of the OpenAPI
document through the rendered Ingress. The gateway's prefix is the base URL
itself: the batch route, the Segment-compatible routes, /openapi.json, and
the API's JSON 404 for an unknown route.
*/}}
{{- define "svc.components" -}}
- { name: ingest-gateway, key: ingestGateway, prefix: /functions/v1 }
- { name: identity-resolver, key: identityResolver }
- { name: profile-api, key: profileApi, prefix: /functions/v1/v1-profiles }
- { name: consent-api, key: consentApi, prefix: /functions/v1/v1-consent }
- { name: conversion-forwarder, key: conversionForwarder }
{{- end -}}

{{- define "svc.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector of one component: pass (list $ "<component>"). */}}
{{- define "svc.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "svc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret with DATABASE_URL, and its key. */}}
{{- define "svc.databaseSecret" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" (include "svc.fullname" .)) -}}
{{- end -}}
{{- define "svc.databaseSecretKey" -}}
{{- if .Values.database.existingSecret }}{{ .Values.database.existingSecretKey }}{{ else }}DATABASE_URL{{ end -}}
{{- end -}}

{{/* The Secret with CONNECTOR_SECRET_KEY, CURSOR_SECRET, RAW_LOG_MASTER_KEY and IDENTIFIER_HASH_KEYS. */}}
{{- define "svc.appSecret" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "svc.fullname" .)) -}}
{{- end -}}

{{/* Where the Secrets' files are mounted, read-only, in every container. */}}
{{- define "svc.secretsDir" -}}/etc/svc/secrets{{- end -}}

{{/*
The files every container reads from Secrets: the one definition the
Deployments and the hook Jobs share (environment, mount and volume below are
made from it). Pass (list $ "<component>"). Each entry: env, the variable that
gets the file's path; secret and key, where the file comes from; path, the
file under svc.secretsDir. Only what the values set is listed.
*/}}
{{- define "svc.secretFiles" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
{{- $db := $.Values.database -}}
{{- $kafka := $.Values.kafka -}}
{{- $registry := $.Values.schemaRegistry -}}
- { env: DATABASE_URL_FILE, secret: {{ include "svc.databaseSecret" $ | quote }}, key: {{ include "svc.databaseSecretKey" $ | quote }}, path: database/url }
{{- with $db.tls.caSecret }}
- { env: DATABASE_SSL_CA_FILE, secret: {{ . | quote }}, key: ca.crt, path: database/ca.crt }
{{- end }}
{{- with $db.tls.clientCertSecret }}
- { env: DATABASE_SSL_CERT_FILE, secret: {{ . | quote }}, key: tls.crt, path: database/tls.crt }
- { env: DATABASE_SSL_KEY_FILE, secret: {{ . | quote }}, key: tls.key, path: database/tls.key }
{{- end }}
{{- with $kafka.tls.caSecret }}
- { env: KAFKA_SSL_CA_FILE, secret: {{ . | quote }}, key: ca.crt, path: kafka/ca.crt }
{{- end }}
{{- with $kafka.tls.clientCertSecret }}
- { env: KAFKA_SSL_CERT_FILE, secret: {{ . | quote }}, key: tls.crt, path: kafka/tls.crt }
- { env: KAFKA_SSL_KEY_FILE, secret: {{ . | quote }}, key: tls.key, path: kafka/tls.key }
{{- end }}
{{- with $kafka.sasl.existingSecret }}
- { env: KAFKA_SASL_PASSWORD_FILE, secret: {{ . | quote }}, key: {{ $kafka.sasl.passwordKey | quote }}, path: kafka/sasl-password }
{{- end }}
{{- with $registry.caSecret }}
- { env: SCHEMA_REGISTRY_CA_FILE, secret: {{ . | quote }}, key: ca.crt, path: schema-registry/ca.crt }
{{- end }}
{{- with $registry.existingSecret }}
- { env: SCHEMA_REGISTRY_PASSWORD_FILE, secret: {{ . | quote }}, key: {{ $registry.passwordKey | quote }}, path: schema-registry/password }
{{- end }}
{{- if eq $component "profile-api" }}
- { env: CURSOR_SECRET_FILE, secret: {{ include "svc.appSecret" $ | quote }}, key: CURSOR_SECRET, path: app/cursor-secret }
{{- end }}
{{- if and (eq $component "smoke-test") $.Values.tests.caSecret }}
- { env: SMOKE_CA_FILE, secret: {{ $.Values.tests.caSecret | quote }}, key: ca.crt, path: tests/ca.crt }
{{- end }}
{{- if has $component (list "identity-resolver" "conversion-forwarder") }}
- { env: CONNECTOR_SECRET_KEY_FILE, secret: {{ include "svc.appSecret" $ | quote }}, key: CONNECTOR_SECRET_KEY, path: app/connector-secret-key }
{{- end }}
{{- if has $component (list "ingest-gateway" "identity-resolver") }}
- { env: RAW_LOG_MASTER_KEY_FILE, secret: {{ include "svc.appSecret" $ | quote }}, key: RAW_LOG_MASTER_KEY, path: app/raw-log-master-key }
{{- end }}
{{- if has $component (list "ingest-gateway" "identity-resolver" "profile-api" "consent-api" "conversion-forwarder") }}
- { env: IDENTIFIER_HASH_KEYS_FILE, secret: {{ include "svc.appSecret" $ | quote }}, key: IDENTIFIER_HASH_KEYS, path: app/identifier-hash-keys }
{{- end }}
{{- end -}}

{{/*
Environment every container of the chart gets (services, migrate, topics):
the shared settings, and the *_FILE variables of svc.secretFiles. Secrets
are never values here. Pass (list $ "<component>").
*/}}
{{- define "svc.env" -}}
{{- $ := index . 0 -}}
{{- $kafka := $.Values.kafka -}}
{{- $registry := $.Values.schemaRegistry -}}
- name: LOG_LEVEL
  value: {{ $.Values.config.logLevel | quote }}
{{- with $.Values.database.tls.mode }}
- name: DATABASE_SSL_MODE
  value: {{ . | quote }}
{{- end }}
- name: KAFKA_BROKERS
  value: {{ $kafka.brokers | quote }}
- name: KAFKA_SECURITY_PROTOCOL
  value: {{ $kafka.securityProtocol | quote }}
{{- with $kafka.sasl.mechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ . | quote }}
{{- end }}
{{- with $kafka.sasl.username }}
- name: KAFKA_SASL_USERNAME
  value: {{ . | quote }}
{{- end }}
- name: KAFKA_REPLICATION_FACTOR
  value: {{ $kafka.replicationFactor | quote }}
- name: KAFKA_MIN_INSYNC_REPLICAS
  value: {{ $kafka.minInsyncReplicas | quote }}
- name: TOPIC_PREFIX
  value: {{ $kafka.topicPrefix | quote }}
- name: SCHEMA_REGISTRY_URL
  value: {{ $registry.url | quote }}
{{- with $registry.username }}
- name: SCHEMA_REGISTRY_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- range $f := include "svc.secretFiles" . | fromYamlArray }}
- name: {{ $f.env }}
  value: {{ printf "%s/%s" (include "svc.secretsDir" $) $f.path | quote }}
{{- end }}
{{- end -}}

{{/* The containers' mounts: /tmp, the Secrets' files, read-only, and extraVolumeMounts. */}}
{{- define "svc.volumeMounts" -}}
- { name: tmp, mountPath: /tmp }
- { name: secrets, mountPath: {{ include "svc.secretsDir" . }}, readOnly: true }
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The user's additions after the chart's environment: extraEnv, as given (value or valueFrom). */}}
{{- define "svc.extraEnv" -}}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The ServiceAccount every pod of the chart runs as. */}}
{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "svc.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
Pod spec fields every pod of the chart shares: identity, token, security,
pull secrets. Pass (list $ <hook>): the pre-install hook Jobs run before the
release's own ServiceAccount exists, so with serviceAccount.create they run
as the namespace's `default` (an existing serviceAccount.name serves them too).
*/}}
{{- define "svc.podIdentity" -}}
{{- $ := index . 0 -}}
{{- $hook := index . 1 -}}
{{- $sa := $.Values.serviceAccount -}}
serviceAccountName: {{ if and $hook $sa.create }}default{{ else }}{{ include "svc.serviceAccountName" $ }}{{ end }}
automountServiceAccountToken: {{ $sa.automount }}
securityContext:
  {{- include "svc.podSecurityContext" $ | nindent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The pods' volumes: /tmp, and one projected volume with exactly the files of
svc.secretFiles (one source per Secret), readable by the pod's group (fsGroup)
only. Pass (list $ "<component>").
*/}}
{{- define "svc.volumes" -}}
{{- $bySecret := dict -}}
{{- range $f := include "svc.secretFiles" . | fromYamlArray -}}
{{- $_ := set $bySecret $f.secret (append ((get $bySecret $f.secret) | default (list)) (dict "key" $f.key "path" $f.path)) -}}
{{- end -}}
- name: tmp
  emptyDir: { sizeLimit: 64Mi }
- name: secrets
  projected:
    # 0440: owner and group; the group is the pod's fsGroup.
    defaultMode: 288
    sources:
      {{- range $secret, $items := $bySecret }}
      - secret:
          name: {{ $secret }}
          items:
            {{- range $items }}
            - { key: {{ .key | quote }}, path: {{ .path }} }
            {{- end }}
      {{- end }}
{{- with (index . 0).Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Rules across values that values.schema.json cannot say; each failure names
the values to change. Included once, by deployments.yaml.
*/}}
{{- define "svc.validate" -}}
{{- $kafka := .Values.kafka -}}
{{- $sasl := $kafka.sasl -}}
{{- $registry := .Values.schemaRegistry -}}
{{- $dbTls := .Values.database.tls -}}
{{- if $kafka.schemaRegistryUrl -}}
{{- fail "kafka.schemaRegistryUrl has moved: set schemaRegistry.url instead" -}}
{{- end -}}
{{- if hasPrefix "SASL_" $kafka.securityProtocol -}}
{{- if not (and $sasl.mechanism $sasl.username $sasl.existingSecret) -}}
{{- fail (printf "kafka.securityProtocol %s needs kafka.sasl.mechanism, kafka.sasl.username and kafka.sasl.existingSecret" $kafka.securityProtocol) -}}
{{- end -}}
{{- else if or $sasl.mechanism $sasl.username $sasl.existingSecret -}}
{{- fail (printf "kafka.sasl is set, but kafka.securityProtocol %s does not use SASL (SASL_SSL or SASL_PLAINTEXT does)" $kafka.securityProtocol) -}}
{{- end -}}
{{- if and (or $kafka.tls.caSecret $kafka.tls.clientCertSecret) (not (has $kafka.securityProtocol (list "SSL" "SASL_SSL"))) -}}
{{- fail (printf "kafka.tls is set, but kafka.securityProtocol %s does not use TLS (SSL or SASL_SSL does)" $kafka.securityProtocol) -}}
{{- end -}}
{{- if gt (int $kafka.minInsyncReplicas) (int $kafka.replicationFactor) -}}
{{- fail "kafka.minInsyncReplicas must not exceed kafka.replicationFactor (a one-broker Kafka: both 1)" -}}
{{- end -}}
{{- if and $registry.username (not $registry.existingSecret) -}}
{{- fail "schemaRegistry.username needs schemaRegistry.existingSecret (the password's Secret)" -}}
{{- end -}}
{{- if and $registry.existingSecret (not $registry.username) -}}
{{- fail "schemaRegistry.existingSecret needs schemaRegistry.username" -}}
{{- end -}}
{{- if and $registry.caSecret (not (hasPrefix "https://" $registry.url)) -}}
{{- fail "schemaRegistry.caSecret is set, but schemaRegistry.url is not https://" -}}
{{- end -}}
{{- if and (or $dbTls.caSecret $dbTls.clientCertSecret) (not (has $dbTls.mode (list "require" "verify-ca" "verify-full"))) -}}
{{- fail "database.tls.caSecret and clientCertSecret need database.tls.mode require, verify-ca or verify-full" -}}
{{- end -}}
{{- end -}}

{{/* Non-root, read-only root filesystem, no capabilities: every container. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
# The group of the Secrets' files (svc.volumes), so the service can read them.
fsGroup: 10001
seccompProfile: { type: RuntimeDefault }
{{- end -}}
{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities: { drop: [ALL] }
{{- end -}}
