{{/* The Spark jobs: their application files and arguments, shared by the CronJobs
(spark-submit) and the ScheduledSparkApplications (Spark operator). */}}

{{- define "odradek.spark.jobs" -}}
{{- $s := .Values.spark -}}
{{- $jobs := dict -}}
{{- if $s.audit.enabled -}}
{{- $a := $s.audit -}}
{{- $args := list "--source-bootstrap" (required "spark.audit.sourceBootstrap is required" $a.sourceBootstrap) "--target-bootstrap" ($a.targetBootstrap | default (include "odradek.bootstrapServers" .)) "--source-alias" (required "spark.audit.sourceAlias is required" $a.sourceAlias) "--topics" $a.topics "--window" $a.window "--bucket" $a.bucket "--grace" $a.grace "--output" $a.output -}}
{{- if and (include "odradek.secured" .) (not $a.targetBootstrap) }}{{ $args = concat $args (list "--target-command-config" (include "odradek.spark.clientConfigFile" .)) }}{{ end -}}
{{- $_ := set $jobs "audit" (dict "file" "mirror_audit.py" "schedule" $a.schedule "args" $args) -}}
{{- end -}}
{{- if $s.compaction.enabled -}}
{{- $c := $s.compaction -}}
{{- $args := list "--bootstrap" ($c.bootstrap | default (include "odradek.bootstrapServers" .)) "--topics" (required "spark.compaction.topics is required" $c.topics) "--output" $c.output -}}
{{- if and (include "odradek.secured" .) (not $c.bootstrap) }}{{ $args = concat $args (list "--command-config" (include "odradek.spark.clientConfigFile" .)) }}{{ end -}}
{{- if $c.verify }}{{ $args = append $args "--verify" }}{{ end -}}
{{- with $c.mirrorBootstrap }}{{ $args = concat $args (list "--mirror-bootstrap" .) }}{{ end -}}
{{- with $c.sourceAlias }}{{ $args = concat $args (list "--source-alias" .) }}{{ end -}}
{{- $_ := set $jobs "compaction" (dict "file" "compact.py" "schedule" $c.schedule "args" $args) -}}
{{- end -}}
{{- toYaml $jobs -}}
{{- end -}}

{{- define "odradek.spark.serviceAccount" -}}
{{ include "odradek.fullname" .root }}-spark-{{ .role }}
{{- end -}}

{{/* The pod security of the driver and executor pods (Spark's image runs as uid 185). */}}
{{- define "odradek.spark.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 185
runAsGroup: 185
fsGroup: 185
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Where the driver and executor pods find this release's client properties. */}}
{{- define "odradek.spark.clientConfigFile" -}}
/etc/odradek/client/client.properties
{{- end -}}

{{/* The jobs' client properties for this release's brokers, the same security as its
other clients: TLS trusting the release's ca.crt, SCRAM as spark.user with the password
read from sasl.users.existingSecret (mounted at /etc/odradek/user) through Kafka's
DirectoryConfigProvider, so no password is in the ConfigMap. */}}
{{- define "odradek.spark.clientProperties" -}}
security.protocol={{ include "odradek.clientProtocol" . }}
{{- if .Values.tls.enabled }}
ssl.truststore.type=PEM
ssl.truststore.location=/etc/odradek/tls/ca.crt
{{- end }}
{{- if .Values.sasl.scram.enabled }}
sasl.mechanism=SCRAM-SHA-512
config.providers=secret
config.providers.secret.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="{{ .Values.spark.user }}" password="${secret:/etc/odradek/user:password}";
{{- end }}
{{- end -}}

{{/* The volumes behind the client properties, when the release's listeners are secured. */}}
{{- define "odradek.spark.clientVolumes" -}}
{{- if include "odradek.secured" . }}
- name: client
  configMap: {name: {{ include "odradek.fullname" . }}-spark-client}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ include "odradek.tlsSecret" (dict "root" . "pool" (include "odradek.brokerPool" .)) }}
    defaultMode: 0440
    items: [{key: ca.crt, path: ca.crt}]
{{- end }}
{{- if .Values.sasl.scram.enabled }}
- name: user
  secret:
    secretName: {{ .Values.sasl.users.existingSecret }}
    defaultMode: 0440
    items: [{key: {{ .Values.spark.user | quote }}, path: password}]
{{- end }}
{{- end }}
{{- end -}}

{{- define "odradek.spark.clientMounts" -}}
{{- if include "odradek.secured" . }}
- {name: client, mountPath: /etc/odradek/client, readOnly: true}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/odradek/tls, readOnly: true}
{{- end }}
{{- if .Values.sasl.scram.enabled }}
- {name: user, mountPath: /etc/odradek/user, readOnly: true}
{{- end }}
{{- end }}
{{- end -}}
