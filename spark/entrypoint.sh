#!/bin/bash
# The Spark-on-Kubernetes container contract: Spark starts the driver pod with `driver ARGS`
# and executor pods with `executor` and SPARK_* variables; anything else runs as given.
set -euo pipefail

classpath="${SPARK_HOME}/conf:${SPARK_HOME}/jars/*${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}"
mapfile -t java_opts < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | cut -d= -f2-)

case "${1:-}" in
  driver)
    shift
    exec tini -s -- "${SPARK_HOME}/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" --deploy-mode client "$@"
    ;;
  executor)
    exec tini -s -- java "${java_opts[@]}" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" -cp "${classpath}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
      --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec tini -s -- "$@"
    ;;
esac
