{{/*
A pool of Odradek nodes: its StatefulSet, headless Service and PodDisruptionBudget.
Called with (dict "root" $ "pool" "controller"|"broker"|"combined"). Controllers take their
settings from .Values.controllers, brokers and combined nodes from .Values.brokers.
*/}}
{{- define "odradek.nodePool" -}}
{{- $root := .root -}}
{{- $pool := .pool -}}
{{- $isBroker := ne $pool "controller" -}}
{{- $isController := ne $pool "broker" -}}
{{- $v := ternary $root.Values.brokers $root.Values.controllers $isBroker -}}
{{- $ctx := dict "root" $root "component" $pool -}}
{{- $name := include "odradek.poolName" (dict "root" $root "pool" $pool) -}}
{{- $headless := include "odradek.headlessName" (dict "root" $root "pool" $pool) -}}
{{- $external := $root.Values.brokers.external -}}
{{- $externalOn := and $isBroker $external.enabled -}}
{{- $nodeInfo := and $isBroker (include "odradek.nodeInfo" $root) -}}
{{- $listenPort := ternary $v.port $root.Values.controllers.port $isBroker -}}
{{- $secured := include "odradek.secured" $root -}}
{{- $replicationOn := and $isBroker $secured -}}
{{- $clientProtocol := include "odradek.clientProtocol" $root -}}
{{- $tlsOn := $root.Values.tls.enabled -}}
{{- $usersOn := and $isController $root.Values.sasl.scram.enabled -}}
{{- if and $externalOn (not (eq $external.type "NodePort")) (lt (len $external.advertisedHosts) (int $v.replicas)) }}
{{- fail (printf "brokers.external.advertisedHosts names %d hosts for %d brokers: a LoadBalancer needs one per broker" (len $external.advertisedHosts) (int $v.replicas)) }}
{{- end }}
apiVersion: v1
kind: Service
metadata:
  name: {{ $headless }}
  labels:
    {{- include "odradek.labels" $ctx | nindent 4 }}
spec:
  clusterIP: None
  # The pods resolve each other before they are ready: the quorum forms from these names.
  publishNotReadyAddresses: true
  selector:
    {{- include "odradek.selectorLabels" $ctx | nindent 4 }}
  ports:
    {{- if $isBroker }}
    - {name: internal, port: {{ $v.port }}, targetPort: internal}
    {{- end }}
    {{- if $replicationOn }}
    - {name: replication, port: {{ $v.replicationPort }}, targetPort: replication}
    {{- end }}
    {{- if $isController }}
    - {name: controller, port: {{ $root.Values.controllers.port }}, targetPort: controller}
    {{- end }}
    - {name: metrics, port: {{ $root.Values.metricsPort }}, targetPort: metrics}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  labels:
    {{- include "odradek.labels" $ctx | nindent 4 }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "odradek.selectorLabels" $ctx | nindent 6 }}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $name }}
  labels:
    {{- include "odradek.labels" $ctx | nindent 4 }}
spec:
  serviceName: {{ $headless }}
  replicas: {{ $v.replicas }}
  # A quorum needs a majority of its voters up before any is ready, so controllers start
  # together; brokers start one after the other. Updates roll one pod at a time, each
  # waiting for the previous one to be ready again (registered, unfenced, caught up).
  podManagementPolicy: {{ ternary "Parallel" "OrderedReady" $isController }}
  updateStrategy:
    type: RollingUpdate
  selector:
    matchLabels:
      {{- include "odradek.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "odradek.podLabels" $ctx | nindent 8 }}
    spec:
      {{- with include "odradek.imagePullSecrets" $root }}{{ . | nindent 6 }}{{ end }}
      {{- if $nodeInfo }}
      serviceAccountName: {{ include "odradek.fullname" $root }}-node-info
      {{- end }}
      automountServiceAccountToken: {{ if $nodeInfo }}true{{ else }}false{{ end }}
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      securityContext:
        {{- include "odradek.podSecurityContext" 10001 | nindent 8 }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      affinity:
        podAntiAffinity:
          {{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "odradek.selectorLabels" $ctx | fromYaml)) }}
          {{- if and $isBroker (eq $v.podAntiAffinity "hard") }}
          requiredDuringSchedulingIgnoredDuringExecution:
            - {{- toYaml $term | nindent 14 }}
          {{- else }}
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                {{- toYaml $term | nindent 16 }}
          {{- end }}
      {{- if $root.Values.brokers.topologySpread.enabled }}
      topologySpreadConstraints:
        - maxSkew: {{ $root.Values.brokers.topologySpread.maxSkew }}
          topologyKey: {{ $root.Values.brokers.topologySpread.topologyKey }}
          whenUnsatisfiable: {{ $root.Values.brokers.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "odradek.selectorLabels" $ctx | nindent 14 }}
      {{- end }}
      {{- if $nodeInfo }}
      initContainers:
        # The node's zone label (broker.rack) and address, from the API server: the
        # downward API cannot expose a node's labels.
        - name: node-info
          image: {{ include "odradek.image" (dict "root" $root "component" "broker") }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [python3, -m, odradek.image.kubernetes_node, --output, /var/run/odradek,
                    --zone-label, {{ $root.Values.brokers.rack.nodeLabel | quote }}]
          env:
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          resources:
            requests: {cpu: 50m, memory: 64Mi}
            limits: {cpu: 200m, memory: 128Mi}
          securityContext:
            {{- include "odradek.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - {name: node-info, mountPath: /var/run/odradek}
      {{- end }}
      containers:
        - name: odradek
          image: {{ include "odradek.image" (dict "root" $root "component" (ternary "broker" "controller" $isBroker)) }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          # the node is PID 1 and gets SIGTERM, its controlled shutdown; node.id, a broker's
          # advertised listeners and broker.rack come from the pod (odradek/image/pod.py)
          command: [python3, -m, odradek.image.entrypoint, run]
          env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
            - {name: NODE_ID_BASE, value: {{ $v.nodeIdBase | quote }}}
            - name: ODRADEK_CLUSTER_ID
              valueFrom:
                secretKeyRef: {name: {{ include "odradek.clusterIdSecret" $root }}, key: cluster.id}
            - name: ODRADEK_PROCESS_ROLES
              value: {{ ternary "broker,controller" (ternary "broker" "controller" $isBroker) (eq $pool "combined") }}
            - name: ODRADEK_CONTROLLER_QUORUM_VOTERS
              value: {{ include "odradek.quorumVoters" $root | quote }}
            - {name: ODRADEK_CONTROLLER_LISTENER_NAMES, value: CONTROLLER}
            {{- $listeners := list }}
            {{- $protocols := list (printf "CONTROLLER:%s" (ternary "SSL" "PLAINTEXT" $tlsOn)) }}
            {{- if $isBroker }}
            {{- $listeners = append $listeners (printf "INTERNAL://:%d" (int $v.port)) }}
            {{- $protocols = append $protocols (printf "INTERNAL:%s" $clientProtocol) }}
            {{- if $replicationOn }}
            {{- $listeners = append $listeners (printf "REPLICATION://:%d" (int $v.replicationPort)) }}
            {{- $protocols = append $protocols (printf "REPLICATION:%s" (ternary "SSL" "PLAINTEXT" $tlsOn)) }}
            {{- end }}
            {{- if $externalOn }}
            {{- $listeners = append $listeners (printf "EXTERNAL://:%d" (int $external.containerPort)) }}
            {{- $protocols = append $protocols (printf "EXTERNAL:%s" $clientProtocol) }}
            {{- end }}
            {{- end }}
            {{- if $isController }}
            {{- $listeners = append $listeners (printf "CONTROLLER://:%d" (int $root.Values.controllers.port)) }}
            {{- end }}
            - {name: ODRADEK_LISTENERS, value: {{ join "," $listeners | quote }}}
            - {name: ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP, value: {{ join "," $protocols | quote }}}
            - {name: ODRADEK_METRICS_PORT, value: {{ $root.Values.metricsPort | quote }}}
            {{- if $isBroker }}
            - {name: ODRADEK_INTER_BROKER_LISTENER_NAME, value: {{ ternary "REPLICATION" "INTERNAL" (not (not $replicationOn)) }}}
            {{- if $replicationOn }}
            - {name: REPLICATION_PORT, value: {{ $v.replicationPort | quote }}}
            {{- end }}
            {{- if $root.Values.sasl.scram.enabled }}
            - {name: ODRADEK_SASL_ENABLED_MECHANISMS, value: "SCRAM-SHA-512,SCRAM-SHA-256"}
            {{- end }}
            {{- if and $tlsOn $replicationOn }}
            # replication and transaction markers over mutual TLS; a peer's principal is its
            # certificate's CN
            - {name: ODRADEK_LISTENER_NAME_REPLICATION_SSL_CLIENT_AUTH, value: required}
            - {name: ODRADEK_LISTENER_NAME_REPLICATION_SSL_PRINCIPAL_MAPPING_RULES, value: "RULE:^CN=([^,]+)$/$1/,DEFAULT"}
            {{- end }}
            {{- if $tlsOn }}
            {{- range $listener := ternary (list "INTERNAL" "EXTERNAL") (list "INTERNAL") $externalOn }}
            - {name: ODRADEK_LISTENER_NAME_{{ $listener }}_SSL_CLIENT_AUTH, value: {{ $root.Values.tls.clientAuth | quote }}}
            {{- end }}
            - {name: ODRADEK_SSL_PRINCIPAL_MAPPING_RULES, value: {{ $root.Values.tls.principalMappingRules | quote }}}
            {{- end }}
            {{- if $root.Values.authorization.enabled }}
            - {name: ODRADEK_AUTHORIZER_CLASS_NAME, value: org.apache.kafka.metadata.authorizer.StandardAuthorizer}
            # the brokers as they connect to each other on REPLICATION: their certificate's CN
            # with TLS, else User:ANONYMOUS (PLAINTEXT)
            - {name: ODRADEK_SUPER_USERS, value: {{ join ";" (append $root.Values.authorization.superUsers (printf "User:%s" (include "odradek.replicationPrincipal" $root))) | quote }}}
            {{- end }}
            - {name: HEADLESS_SERVICE, value: {{ $headless }}}
            - {name: CLUSTER_DOMAIN, value: {{ $root.Values.clusterDomain }}}
            - {name: INTERNAL_PORT, value: {{ $v.port | quote }}}
            {{- if $externalOn }}
            {{- if eq $external.type "NodePort" }}
            - {name: EXTERNAL_PORT, value: {{ $external.nodePortBase | quote }}}
            - {name: EXTERNAL_PORT_STEP, value: "1"}
            {{- else }}
            - {name: EXTERNAL_PORT, value: {{ $external.loadBalancerPort | quote }}}
            - {name: EXTERNAL_PORT_STEP, value: "0"}
            {{- end }}
            {{- with $external.advertisedHosts }}
            - {name: EXTERNAL_HOSTS, value: {{ join " " . | quote }}}
            {{- end }}
            {{- end }}
            {{- end }}
            {{- if $tlsOn }}
            - {name: ODRADEK_TLS_DIR, value: /etc/odradek/tls}
            {{- if $isController }}
            # controllers' gRPC (Raft, brokers' registrations and metadata) over mutual TLS
            - {name: ODRADEK_LISTENER_NAME_CONTROLLER_SSL_CLIENT_AUTH, value: required}
            {{- end }}
            {{- end }}
            {{- if $usersOn }}
            - {name: ODRADEK_SCRAM_USERS_DIR, value: /etc/odradek/users}
            {{- end }}
            {{- range $key, $value := $v.config }}
            - {name: {{ include "odradek.configVariable" $key }}, value: {{ $value | toString | quote }}}
            {{- end }}
          ports:
            {{- if $isBroker }}
            - {name: internal, containerPort: {{ $v.port }}}
            {{- if $replicationOn }}
            - {name: replication, containerPort: {{ $v.replicationPort }}}
            {{- end }}
            {{- if $externalOn }}
            - {name: external, containerPort: {{ $external.containerPort }}}
            {{- end }}
            {{- end }}
            {{- if $isController }}
            - {name: controller, containerPort: {{ $root.Values.controllers.port }}}
            {{- end }}
            - {name: metrics, containerPort: {{ $root.Values.metricsPort }}}
          # Ready: a broker registered, caught up with the metadata log and unfenced; a
          # controller a voter of a quorum with a leader (GET /health).
          readinessProbe:
            httpGet: {path: /health, port: metrics}
            periodSeconds: 5
            timeoutSeconds: 5
            failureThreshold: 3
          # Alive: the listener accepts connections. A fenced or catching-up node is not
          # ready but alive, and is left to recover.
          livenessProbe:
            tcpSocket: {port: {{ $listenPort }}}
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 6
          # Log recovery after an unclean stop may take minutes before the listener opens.
          startupProbe:
            tcpSocket: {port: {{ $listenPort }}}
            periodSeconds: 5
            failureThreshold: 120
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- include "odradek.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - {name: data, mountPath: /var/lib/odradek}
            - {name: tmp, mountPath: /tmp}
            {{- if $nodeInfo }}
            - {name: node-info, mountPath: /var/run/odradek, readOnly: true}
            {{- end }}
            {{- if $tlsOn }}
            - {name: tls, mountPath: /etc/odradek/tls, readOnly: true}
            {{- end }}
            {{- if $usersOn }}
            - {name: users, mountPath: /etc/odradek/users, readOnly: true}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {sizeLimit: 64Mi}
        {{- if $tlsOn }}
        - name: tls
          secret:
            secretName: {{ include "odradek.tlsSecret" (dict "root" $root "pool" $pool) }}
            defaultMode: 0440
        {{- end }}
        {{- if $usersOn }}
        - name: users
          secret:
            secretName: {{ $root.Values.sasl.users.existingSecret }}
            defaultMode: 0440
        {{- end }}
        {{- if $nodeInfo }}
        - name: node-info
          emptyDir: {sizeLimit: 1Mi}
        {{- end }}
  volumeClaimTemplates:
    - metadata:
        name: data
        labels:
          {{- include "odradek.selectorLabels" $ctx | nindent 10 }}
      spec:
        accessModes: [ReadWriteOnce]
        {{- with $v.storage.storageClassName }}
        storageClassName: {{ . }}
        {{- end }}
        resources:
          requests:
            storage: {{ $v.storage.size }}
{{- end -}}
