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
of their values, and whether the ingress routes to them (and under which prefix).
*/}}
{{- define "svc.components" -}}
- { name: ingest-gateway, key: ingestGateway, prefix: /functions/v1/v1-batch }
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

{{/* The Secret with CONNECTOR_SECRET_KEY and CURSOR_SECRET. */}}
{{- define "svc.appSecret" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "svc.fullname" .)) -}}
{{- end -}}

{{/* Environment every container of the chart gets. */}}
{{- define "svc.commonEnv" -}}
- name: LOG_LEVEL
  value: {{ .Values.config.logLevel | quote }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef: { name: {{ include "svc.databaseSecret" . }}, key: {{ include "svc.databaseSecretKey" . }} }
- name: KAFKA_BROKERS
  value: {{ .Values.kafka.brokers | quote }}
- name: SCHEMA_REGISTRY_URL
  value: {{ .Values.kafka.schemaRegistryUrl | quote }}
- name: TOPIC_PREFIX
  value: {{ .Values.kafka.topicPrefix | quote }}
{{- end -}}

{{/* Non-root, read-only root filesystem, no capabilities: every container. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
seccompProfile: { type: RuntimeDefault }
{{- end -}}
{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities: { drop: [ALL] }
{{- end -}}
