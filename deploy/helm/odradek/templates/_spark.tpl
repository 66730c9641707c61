{{/* The Spark jobs: their application files and arguments, shared by the CronJobs
(spark-submit) and the ScheduledSparkApplications (Spark operator). */}}

{{- define "odradek.spark.jobs" -}}
{{- $s := .Values.spark -}}
{{- $jobs := dict -}}
{{- if $s.audit.enabled -}}
{{- $a := $s.audit -}}
{{- $args := list "--source-bootstrap" (required "spark.audit.sourceBootstrap is required" $a.sourceBootstrap) "--target-bootstrap" ($a.targetBootstrap | default (include "odradek.bootstrapServers" .)) "--source-alias" (required "spark.audit.sourceAlias is required" $a.sourceAlias) "--topics" $a.topics "--window" $a.window "--bucket" $a.bucket "--grace" $a.grace "--output" $a.output -}}
{{- $_ := set $jobs "audit" (dict "file" "mirror_audit.py" "schedule" $a.schedule "args" $args) -}}
{{- end -}}
{{- if $s.compaction.enabled -}}
{{- $c := $s.compaction -}}
{{- $args := list "--bootstrap" ($c.bootstrap | default (include "odradek.bootstrapServers" .)) "--topics" (required "spark.compaction.topics is required" $c.topics) "--output" $c.output -}}
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
