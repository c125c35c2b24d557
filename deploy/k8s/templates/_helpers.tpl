{{/* <release>-<chart> (the release alone when it contains the chart's name), at most 63 characters. Args: (dict "chart" "card-library" "release" "cards") */}}
{{- define "card-library.fullnameFor" -}}
{{- if contains .chart .release -}}
{{- .release | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .release .chart | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Release-wide name, at most 63 characters. */}}
{{- define "card-library.fullname" -}}
{{- include "card-library.fullnameFor" (dict "chart" .Chart.Name "release" .Release.Name) -}}
{{- end -}}

{{/*
Name of a component's Deployment and Service, in this release or, with "release", in the release that installs it
(components.<name>.release). Args: (dict "root" $ "name" "cards" ["release" "cards-team"])
*/}}
{{- define "card-library.componentName" -}}
{{- printf "%s-%s" (include "card-library.fullnameFor" (dict "chart" .root.Chart.Name "release" (.release | default .root.Release.Name))) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Where a peer runs, as YAML: {release, namespace} of this release when it is enabled here, of components.<name>.release
(and .namespace) when another release installs it, {} when it runs nowhere. Args: (dict "root" $ "p" $peerSettings)
*/}}
{{- define "card-library.peerLocation" -}}
{{- if .p.enabled -}}
{{- toYaml (dict "release" .root.Release.Name "namespace" .root.Release.Namespace) -}}
{{- else if .p.release -}}
{{- toYaml (dict "release" .p.release "namespace" (.p.namespace | default .root.Release.Namespace)) -}}
{{- else -}}
{{- "{}" -}}
{{- end -}}
{{- end -}}

{{/*
Pod selector of a component's pods in whichever release runs them (NetworkPolicy peers): by app.kubernetes.io/part-of,
not the release, so components of one system installed as separate releases reach each other. Args: (dict "root" $ "name" "cards")
*/}}
{{- define "card-library.peerSelectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/part-of: {{ .root.Values.partOf | default "card-library" }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* A NetworkPolicy peer for component "name" at "location" (from peerLocation). Args: (dict "root" $ "name" "cards" "location" $loc) */}}
{{- define "card-library.networkPeer" -}}
- podSelector:
    matchLabels:
      {{- include "card-library.peerSelectorLabels" . | nindent 6 }}
  {{- if ne .location.namespace .root.Release.Namespace }}
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ .location.namespace }}
  {{- end }}
{{- end -}}

{{/*
Name of a gRPC component's headless Service (clusterIP: None), its callers' target: cluster DNS answers it with every
ready pod's address, which their round_robin channels spread calls over. Args: (dict "root" $ "name" "cards")
*/}}
{{- define "card-library.grpcServiceName" -}}
{{- printf "%s-grpc" (include "card-library.componentName" . | trunc 58 | trimSuffix "-") -}}
{{- end -}}

{{/* Service name of a bundled subchart, as bitnami's common.names.fullname makes it. Args: (dict "root" $ "chart" "mongodb") */}}
{{- define "card-library.subchartName" -}}
{{- if contains .chart .root.Release.Name -}}
{{- .root.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .root.Release.Name .chart | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "card-library.secretName" -}}
{{- default (include "card-library.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/*
JWT_SECRET and FILES_INTERNAL_TOKEN of the Secret the chart creates: the values given, else what that Secret in the
cluster holds (lookup, so `helm upgrade` keeps generated ones; lookup is empty under `helm template`), else random.
Worked out once per render and kept in .Values, so the Secret and each Deployment's checksum/secret (which renders
the Secret again) see the same values. Returns YAML.
*/}}
{{- define "card-library.generatedSecrets" -}}
{{- if not (hasKey .Values "cardLibraryGeneratedSecrets") -}}
{{- $previous := (lookup "v1" "Secret" .Release.Namespace (include "card-library.fullname" .)).data | default dict -}}
{{- $jwt := .Values.secrets.jwtSecret | default (index $previous "JWT_SECRET" | default "" | b64dec) | default (randAlphaNum 48) -}}
{{- $filesToken := .Values.secrets.filesInternalToken | default (index $previous "FILES_INTERNAL_TOKEN" | default "" | b64dec) | default (randAlphaNum 48) -}}
{{- $_ := set .Values "cardLibraryGeneratedSecrets" (dict "jwtSecret" $jwt "filesInternalToken" $filesToken) -}}
{{- end -}}
{{- toYaml .Values.cardLibraryGeneratedSecrets -}}
{{- end -}}

{{/*
checksum/secret of one component's pods: over the keys of the release's Secret its containers read (the secretKeyRefs
of its env, extraEnv included), so rotating a key restarts only the components that read it. Args: (dict "root" $
"name" "cards" "c" $settings)
*/}}
{{- define "card-library.secretChecksum" -}}
{{- $secret := include "card-library.secretName" .root -}}
{{- $data := (include (print .root.Template.BasePath "/secret.yaml") .root | fromYaml).data | default dict -}}
{{- $read := dict -}}
{{- range $var := include "card-library.env" . | fromYamlArray -}}
{{- $ref := dig "valueFrom" "secretKeyRef" dict $var -}}
{{- if and $ref (eq ($ref.name | default "") $secret) -}}
{{- $_ := set $read $ref.key (index $data $ref.key | default "") -}}
{{- end -}}
{{- end -}}
{{- toJson $read | sha256sum -}}
{{- end -}}

{{- define "card-library.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "card-library.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "card-library.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: {{ .Values.partOf | default "card-library" }}
{{- end -}}

{{/* A label value of an image tag: a tag pinned by digest (0.4.2@sha256:…) by its name; a label allows [A-Za-z0-9._-] only. */}}
{{- define "card-library.versionLabel" -}}
{{- regexReplaceAll "[^A-Za-z0-9._-]" (splitList "@" (toString .) | first) "_" | trunc 63 | trimAll "._-" | quote -}}
{{- end -}}

{{/*
Labels of a component's objects (Deployment, Services, HPA, PDB, ...): the release-wide ones, but the version the
component runs (its image tag, components.<name>.image.tag, else the chart's appVersion). Args: (dict "root" $ "name" "cards" "version" "0.2.0")
*/}}
{{- define "card-library.componentLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ include "card-library.versionLabel" .version }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: {{ .root.Values.partOf | default "card-library" }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Args: (dict "root" $ "name" "cards") */}}
{{- define "card-library.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/*
Labels of a component's pods: its selector labels and the version it runs (its image tag), nothing
release-wide, so an upgrade that leaves a component's settings alone (a new chart version, another
component's release) does not roll its pods. Args: (dict "root" $ "name" "cards" "version" "0.2.0")
*/}}
{{- define "card-library.podLabels" -}}
{{ include "card-library.selectorLabels" . }}
app.kubernetes.io/version: {{ include "card-library.versionLabel" .version }}
app.kubernetes.io/part-of: {{ .root.Values.partOf | default "card-library" }}
{{- end -}}

{{/* Component settings: `default` deep-merged with the component's entry. Args: (dict "root" $ "name" "cards"); returns YAML. */}}
{{- define "card-library.component" -}}
{{- $entry := index .root.Values.components .name | default dict -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.default) (deepCopy $entry)) -}}
{{- end -}}

{{/* Which engines are configured, failing early with a clear message when a required one is missing. */}}
{{- define "card-library.requireEngine" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- if eq .engine "mongodb" -}}
{{- if not (or $v.mongodb.enabled $v.engines.mongodb.url $v.secrets.existingSecret) -}}
{{- fail "MongoDB: set engines.mongodb.url, enable the bundled mongodb (mongodb.enabled=true), or provide MONGO_URL in secrets.existingSecret" -}}
{{- end -}}
{{- else if eq .engine "elasticsearch" -}}
{{- if not (or $v.elasticsearch.enabled $v.engines.elasticsearch.url $v.secrets.existingSecret) -}}
{{- fail "Elasticsearch: set engines.elasticsearch.url, enable the bundled elasticsearch (elasticsearch.enabled=true), or provide ELASTICSEARCH_URL in secrets.existingSecret" -}}
{{- end -}}
{{- else if eq .engine "kafka" -}}
{{- if not (or $v.kafka.enabled $v.engines.kafka.brokers) -}}
{{- fail "Kafka: set engines.kafka.brokers or enable the bundled kafka (kafka.enabled=true); separate pods cannot share the embedded event log" -}}
{{- end -}}
{{- else if eq .engine "s3" -}}
{{- if not (or $v.minio.enabled $v.engines.s3.endpoint) -}}
{{- fail "S3: set engines.s3.endpoint or enable the bundled minio (minio.enabled=true)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Refuses a component whose `uses` leaves out an engine its data needs, which would otherwise fall back to its embedded
store on the pod's emptyDir: lost with the pod and different in every pod. Kafka always (no other pod reads a pod's
embedded event log); the stores and identity's session key unless `persistence` gives the one pod a volume for them.
Args: (dict "name" "cards" "c" $settings)
*/}}
{{- define "card-library.requireDurableEngines" -}}
{{- $stores := dict "identity" (list "mongodb" "jwt") "cards" (list "mongodb") "search" (list "mongodb" "elasticsearch") "files" (list "mongodb" "s3") "notifications" (list "mongodb") -}}
{{- if and (has .name (list "cards" "search" "files" "notifications")) (not (has "kafka" .c.uses)) -}}
{{- fail (printf "components.%s.uses has no kafka: %s would publish and read its events on its pod's embedded event log, which no other pod shares. Add kafka to components.%s.uses" .name .name .name) -}}
{{- end -}}
{{- if not .c.persistence.enabled -}}
{{- range $engine := index $stores .name | default list -}}
{{- if not (has $engine $.c.uses) -}}
{{- fail (printf "components.%s.uses has no %s: each %s pod would keep %s on its emptyDir (lost with the pod, different in every pod). Add %s to components.%s.uses, or set components.%s.persistence.enabled to run one pod on its embedded store" $.name $engine $.name (eq $engine "jwt" | ternary "a session key of its own" "its data in SQLite") $engine $.name $.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Refuses an identity that would write invitation and reset mail as .eml files on its pod's emptyDir, where nobody reads
them (so nobody could register or reset a password), unless the operator chose that: components.identity.env
MAIL_TO_FILES "true" (or "1", "yes", in any case: what the service reads as true). An existingSecret's SMTP_URL cannot be seen here: the service itself refuses an empty one
(EMBEDDED_STORES=refuse). A pod with `persistence` keeps its mail on its volume. Args: (dict "root" $ "name" "identity" "c" $settings)
*/}}
{{- define "card-library.requireMail" -}}
{{- $v := .root.Values -}}
{{- $chosen := has (lower (trim (toString (index (.c.env | default dict) "MAIL_TO_FILES" | default "")))) (list "true" "1" "yes") -}}
{{- if and (eq .name "identity") (not .c.persistence.enabled) (not $chosen) -}}
{{- $noMail := "nobody could register or reset a password; to run without mail anyway (written as .eml files on the pod's emptyDir) set components.identity.env.MAIL_TO_FILES=\"true\"" -}}
{{- if not (has "smtp" .c.uses) -}}
{{- fail (printf "components.identity.uses has no smtp: identity would send no invitation or reset mail and %s. Add smtp to components.identity.uses" $noMail) -}}
{{- else if not (or $v.secrets.smtpUrl $v.secrets.existingSecret) -}}
{{- fail (printf "SMTP: set secrets.smtpUrl (or SMTP_URL in secrets.existingSecret), the server identity sends invitation and password-reset mail through. Without it %s" $noMail) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Refuses a gateway or files whose partner on the files download port runs in another release while this release would
generate FILES_INTERNAL_TOKEN: each release generates its own, so the gateway's downloads would be refused. Args:
(dict "root" $ "name" "files" "c" $settings)
*/}}
{{- define "card-library.requireSharedToken" -}}
{{- $v := .root.Values -}}
{{- if and (has .name (list "gateway" "files")) (not (or $v.secrets.existingSecret $v.secrets.filesInternalToken)) -}}
{{- $other := ternary "files" "gateway" (eq .name "gateway") -}}
{{- $o := include "card-library.component" (dict "root" .root "name" $other) | fromYaml -}}
{{- if and (not $o.enabled) $o.release -}}
{{- fail (printf "components.%s.release: %s runs in release %s, which has a FILES_INTERNAL_TOKEN of its own unless both releases read one: set secrets.existingSecret (one Secret for every release) or the same secrets.filesInternalToken in both (docs/deploy.md, Releasing one service)" $other $other $o.release) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Environment of one component. Args: (dict "root" $ "name" "cards" "c" $settings) */}}
{{- define "card-library.env" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $c := .c -}}
{{- $upper := upper .name -}}
{{- $secret := include "card-library.secretName" $root -}}
- name: NODE_ENV
  value: production
- name: LOG_LEVEL
  value: {{ $v.logLevel | quote }}
- name: DATA_DIR
  value: {{ $c.dataDir | quote }}
{{- if and (eq $c.protocol "grpc") (not $c.persistence.enabled) }}
{{- /* An engine URL left empty (e.g. in an existingSecret) stops the service instead of its data going to the emptyDir. */}}
- name: EMBEDDED_STORES
  value: refuse
{{- end }}
{{- /* Read by the gateway (cookies, CSRF origin) and by whoever sends mail with links (identity). */}}
{{- if or (eq $c.protocol "http") (has "smtp" $c.uses) }}
- name: PUBLIC_URL
  value: {{ $v.publicUrl | quote }}
{{- end }}
{{- if eq $c.protocol "http" }}
- name: HOST
  value: "0.0.0.0"
- name: PORT
  value: {{ $c.port | quote }}
{{- else }}
- name: {{ $upper }}_GRPC_HOST
  value: "0.0.0.0"
- name: {{ $upper }}_GRPC_PORT
  value: {{ $c.port | quote }}
{{- end }}
{{- if $c.metricsPath }}
- name: METRICS_HOST
  value: "0.0.0.0"
- name: METRICS_PORT
  value: {{ $c.metricsPort | quote }}
{{- end }}
{{- /* Requests and calls under way get what the grace period leaves after the preStop pause, less 5 s to close the rest. */}}
- name: SHUTDOWN_DRAIN_MS
  value: {{ mul (max 1 (sub (sub (int $c.terminationGracePeriodSeconds) (int $c.preStopSleepSeconds)) 5)) 1000 | quote }}
{{- if $c.httpPort }}
- name: {{ $upper }}_HTTP_HOST
  value: "0.0.0.0"
- name: {{ $upper }}_HTTP_PORT
  value: {{ $c.httpPort | quote }}
- name: {{ $upper }}_INTERNAL_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $upper }}_INTERNAL_TOKEN
{{- /* Only the port's owner reads it, so a rotation's first and last steps restart files alone (docs/deploy.md). */}}
- name: {{ $upper }}_INTERNAL_TOKEN_ALSO_ACCEPTED
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $upper }}_INTERNAL_TOKEN_ALSO_ACCEPTED
      optional: true
{{- end }}
{{- range $peer := $c.calls }}
{{- $p := include "card-library.component" (dict "root" $root "name" $peer) | fromYaml }}
{{- $at := include "card-library.peerLocation" (dict "root" $root "p" $p) | fromYaml }}
{{- if $at.release }}
{{- $where := dict "root" $root "name" $peer "release" $at.release }}
- name: {{ upper $peer }}_SERVICE_ADDR
  value: {{ printf "dns:///%s.%s.svc.%s:%v" (include "card-library.grpcServiceName" $where) $at.namespace $v.clusterDomain $p.port | quote }}
{{- if and $p.httpPort (eq $c.protocol "http") }}
- name: {{ upper $peer }}_HTTP_ADDR
  value: {{ printf "%s%s:%v" (include "card-library.componentName" $where) (ternary "" (printf ".%s.svc.%s" $at.namespace $v.clusterDomain) (eq $at.namespace $root.Release.Namespace)) $p.httpPort | quote }}
- name: {{ upper $peer }}_INTERNAL_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ upper $peer }}_INTERNAL_TOKEN
{{- end }}
{{- end }}
{{- end }}
{{- range $engine := $c.uses }}
{{- include "card-library.requireEngine" (dict "root" $root "engine" $engine) }}
{{- if eq $engine "mongodb" }}
{{- if $v.mongodb.enabled }}
- name: MONGODB_ROOT_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "card-library.subchartName" (dict "root" $root "chart" "mongodb") }}
      key: mongodb-root-password
{{- $mongo := include "card-library.subchartName" (dict "root" $root "chart" "mongodb") }}
{{- $members := list }}
{{- range $i := until (int ($v.mongodb.replicaCount | default 1)) }}
{{- $members = append $members (printf "%s-%d.%s-headless.%s.svc.%s:27017" $mongo $i $mongo $root.Release.Namespace $v.clusterDomain) }}
{{- end }}
- name: MONGO_URL
  value: {{ printf "mongodb://root:$(MONGODB_ROOT_PASSWORD)@%s/?replicaSet=%s&authSource=admin" (join "," $members) ($v.mongodb.replicaSetName | default "rs0") | quote }}
{{- else }}
- name: MONGO_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: MONGO_URL
{{- end }}
{{- with $v.engines.mongodb.databasePrefix }}
- name: MONGO_DATABASE_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- else if eq $engine "elasticsearch" }}
{{- if $v.elasticsearch.enabled }}
- name: ELASTICSEARCH_URL
  value: {{ printf "http://%s:9200" (include "card-library.subchartName" (dict "root" $root "chart" "elasticsearch")) | quote }}
{{- else }}
- name: ELASTICSEARCH_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: ELASTICSEARCH_URL
{{- end }}
{{- with $v.engines.elasticsearch.indexPrefix }}
- name: ELASTICSEARCH_INDEX_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- else if eq $engine "kafka" }}
- name: KAFKA_BROKERS
  value: {{ ternary (printf "%s:9092" (include "card-library.subchartName" (dict "root" $root "chart" "kafka"))) $v.engines.kafka.brokers (and $v.kafka.enabled true) | quote }}
{{- with $v.engines.kafka.namespace }}
- name: KAFKA_NAMESPACE
  value: {{ . | quote }}
{{- end }}
{{- with $v.engines.kafka.partitions }}
- name: KAFKA_PARTITIONS
  value: {{ . | toString | quote }}
{{- end }}
{{- if not $v.kafka.enabled }}
{{- if $v.engines.kafka.tls }}
- name: KAFKA_SSL
  value: "true"
{{- end }}
{{- with $v.engines.kafka.sasl }}
{{- if .mechanism }}
{{- if not .existingSecret }}
{{- fail (printf "Kafka: engines.kafka.sasl.mechanism is %s: set engines.kafka.sasl.existingSecret, the Secret holding the username (key %s) and password (key %s)" .mechanism .usernameKey .passwordKey) }}
{{- end }}
- name: KAFKA_SASL_MECHANISM
  value: {{ .mechanism | quote }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .usernameKey }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- else if eq $engine "s3" }}
{{- $minio := include "card-library.subchartName" (dict "root" $root "chart" "minio") }}
- name: S3_ENDPOINT
  value: {{ ternary (printf "http://%s:9000" $minio) $v.engines.s3.endpoint (and $v.minio.enabled true) | quote }}
- name: S3_BUCKET
  value: {{ $v.engines.s3.bucket | quote }}
- name: S3_REGION
  value: {{ $v.engines.s3.region | quote }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ ternary $minio $secret (and $v.minio.enabled true) }}
      key: {{ ternary "root-user" "S3_ACCESS_KEY" (and $v.minio.enabled true) }}
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ ternary $minio $secret (and $v.minio.enabled true) }}
      key: {{ ternary "root-password" "S3_SECRET_KEY" (and $v.minio.enabled true) }}
{{- else if eq $engine "smtp" }}
- name: SMTP_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: SMTP_URL
      optional: true
- name: MAIL_FROM
  value: {{ $v.engines.smtp.mailFrom | quote }}
{{- else if eq $engine "embeddings" }}
{{- if $v.engines.embeddings.url }}
- name: EMBEDDINGS_URL
  value: {{ $v.engines.embeddings.url | quote }}
{{- if $v.engines.embeddings.model }}
- name: EMBEDDINGS_MODEL
  value: {{ $v.engines.embeddings.model | quote }}
{{- end }}
- name: EMBEDDINGS_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: EMBEDDINGS_API_KEY
      optional: true
{{- end }}
{{- else if eq $engine "jwt" }}
- name: JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: JWT_SECRET
{{- end }}
{{- end }}
{{- range $name, $value := $c.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- /* Every component's (top-level extraEnv), then this one's: a later entry of the same name wins. */}}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with $c.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Egress port of an external engine from its URL: the URL's port, else its scheme's (443 for https, 80 for http), else
"fallback" when the URL is not known here (an existingSecret holds it). Args: (dict "url" "https://es.example.com:9243" "fallback" 9200)
*/}}
{{- define "card-library.urlPort" -}}
{{- if .url -}}
{{- $u := urlParse .url -}}
{{- $port := regexFind ":[0-9]+$" $u.host | trimPrefix ":" -}}
{{- $port | default (eq $u.scheme "https" | ternary "443" "80") -}}
{{- else -}}
{{- .fallback -}}
{{- end -}}
{{- end -}}

{{/* Public IPv4 addresses as a NetworkPolicy peer: everything but the private, link-local, CGNAT and loopback ranges. */}}
{{- define "card-library.publicAddresses" -}}
- ipBlock:
    cidr: 0.0.0.0/0
    except: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 169.254.0.0/16, 100.64.0.0/10, 127.0.0.0/8]
{{- end -}}

{{/*
Refuses settings the schema cannot compare with each other, naming the values: a PDB that would block every eviction,
an HPA whose minimum exceeds its maximum, a grace period the preStop pause and the drain do not fit in, a metrics port
on a port the component already listens on. Args: (dict "name" "cards" "c" $settings)
*/}}
{{- define "card-library.requireConsistentSettings" -}}
{{- $c := .c -}}
{{- $n := .name -}}
{{- $autoscaling := and $c.autoscaling.enabled (not $c.persistence.enabled) -}}
{{- $fewest := ternary 1 (int $c.replicas) (and $c.persistence.enabled true) -}}
{{- if $autoscaling -}}
{{- if gt (int $c.autoscaling.minReplicas) (int $c.autoscaling.maxReplicas) -}}
{{- fail (printf "components.%s.autoscaling.minReplicas (%v) is above components.%s.autoscaling.maxReplicas (%v)" $n $c.autoscaling.minReplicas $n $c.autoscaling.maxReplicas) -}}
{{- end -}}
{{- $fewest = int $c.autoscaling.minReplicas -}}
{{- end -}}
{{- if and $c.pdb.enabled (hasKey $c.pdb "minAvailable") (kindIs "float64" $c.pdb.minAvailable) -}}
{{- if ge (int $c.pdb.minAvailable) $fewest -}}
{{- fail (printf "components.%s.pdb.minAvailable (%v) must be below the component's pod count (%d: %s), or no pod could ever be evicted (node drains block)" $n $c.pdb.minAvailable $fewest (ternary "autoscaling.minReplicas" "replicas" $autoscaling)) -}}
{{- end -}}
{{- end -}}
{{- if lt (sub (sub (int $c.terminationGracePeriodSeconds) (int $c.preStopSleepSeconds)) 5) 1 -}}
{{- fail (printf "components.%s.terminationGracePeriodSeconds (%v) must be at least preStopSleepSeconds (%v) + 6: after the preStop pause the pod needs a drain of at least 1 s and 5 s to close its stores before it is killed" $n $c.terminationGracePeriodSeconds $c.preStopSleepSeconds) -}}
{{- end -}}
{{- if $c.metricsPath -}}
{{- if or (eq (int $c.metricsPort) (int $c.port)) (and $c.httpPort (eq (int $c.metricsPort) (int $c.httpPort))) -}}
{{- fail (printf "components.%s.metricsPort (%v) must differ from components.%s.port (%v) and httpPort: metrics are served on a listener of their own" $n $c.metricsPort $n $c.port) -}}
{{- end -}}
{{- end -}}
{{- end -}}
