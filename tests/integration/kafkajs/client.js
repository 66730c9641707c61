#!/usr/bin/env node
// Drives kafkajs for tests/integration/test_kafkajs.py: reads one JSON command (argv[2], or
// stdin when absent), runs its steps in order with one producer and one admin client, and
// prints {"results": [...]} on stdout, one {"ok": value} or {"error": {...}} per step (a
// failed step does not stop the next). kafkajs' own log lines go to stderr.
//
//   {"brokers": ["127.0.0.1:9092"], "steps": [
//     {"op": "produce", "args": {"topic": "t", "acks": -1, "compression": "GZIP",
//        "messages": [{"key": "k", "value": {"base64": "AAE="}, "partition": 0,
//                      "timestamp": 1700000000000, "headers": {"h": ["a", "b"]}}]}},
//     {"op": "createTopics", "args": [{"topics": [{"topic": "t", "numPartitions": 2}]}]},
//     {"op": "fetchTopicOffsets", "args": ["t"]}]}
//
// Optional "ssl" ({"ca": [pem], "cert": pem, "key": pem}) and "sasl" ({"mechanism":
// "scram-sha-512", "username", "password"}) go to the client as kafkajs takes them.
//
// `consume` ({"groupId", "topic", "count", "rackId"?}) runs a consumer group member (in rack
// `rackId`, KIP-392) from the earliest offset until `count` messages arrived, commits them,
// leaves, and answers
// [{"partition", "offset", "value"}]. `produce` answers producer.send's RecordMetadata list;
// every other op names an admin
// method and `args` are its positional arguments. Keys, values and header values are strings
// (UTF-8), null, or {"base64": "..."}; Buffers in results come back as {"base64": "..."}.
// A resource `type` given as a name ("TOPIC") becomes kafkajs' ConfigResourceTypes number.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1' // the Java-compatible default is wanted
const fs = require('fs')
const { Kafka, CompressionTypes, ConfigResourceTypes, logLevel } = require('kafkajs')

const ADMIN_OPS = new Set([
  'createTopics',
  'createPartitions',
  'deleteTopics',
  'deleteTopicRecords',
  'describeCluster',
  'describeConfigs',
  'fetchTopicMetadata',
  'fetchTopicOffsets',
  'fetchTopicOffsetsByTimestamp',
  'listTopics',
])

const toBytes = value =>
  value !== null && typeof value === 'object' && 'base64' in value
    ? Buffer.from(value.base64, 'base64')
    : value

const toHeaders = headers => {
  if (headers == null) return undefined
  const result = {}
  for (const [name, value] of Object.entries(headers)) {
    result[name] = Array.isArray(value) ? value.map(toBytes) : toBytes(value)
  }
  return result
}

const toMessage = ({ key, value, headers, partition, timestamp }) => ({
  key: toBytes(key),
  value: toBytes(value),
  headers: toHeaders(headers),
  partition,
  timestamp: timestamp == null ? undefined : String(timestamp),
})

const withResourceTypes = args =>
  args.map(arg =>
    arg && Array.isArray(arg.resources)
      ? {
          ...arg,
          resources: arg.resources.map(r =>
            typeof r.type === 'string' ? { ...r, type: ConfigResourceTypes[r.type] } : r
          ),
        }
      : arg
  )

const describeError = error => {
  const described = { name: error.name, message: error.message }
  for (const field of ['type', 'code', 'retriable', 'topic', 'partition', 'broker']) {
    if (error[field] !== undefined) described[field] = error[field]
  }
  if (Array.isArray(error.errors)) described.errors = error.errors.map(describeError)
  if (Array.isArray(error.partitions)) {
    described.partitions = error.partitions.map(({ error: cause, ...rest }) => ({
      ...rest,
      error: cause && describeError(cause),
    }))
  }
  if (Array.isArray(error.topicErrors)) described.topicErrors = error.topicErrors
  return described
}

const jsonReplacer = (_, value) =>
  value && value.type === 'Buffer' && Array.isArray(value.data)
    ? { base64: Buffer.from(value.data).toString('base64') }
    : value

async function consume(kafka, { groupId, topic, count, rackId }) {
  const consumer = kafka.consumer({
    groupId,
    rackId: rackId ?? '',
    sessionTimeout: 10000,
    heartbeatInterval: 500,
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    const received = []
    await new Promise((resolve, reject) => {
      consumer
        .run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            received.push({ partition, offset: Number(message.offset), value: message.value })
            await consumer.commitOffsets([
              { topic, partition, offset: String(Number(message.offset) + 1) },
            ])
            if (received.length >= count) resolve()
          },
        })
        .catch(reject)
    })
    return received
  } finally {
    await consumer.disconnect()
  }
}

const readCommand = () => JSON.parse(process.argv[2] ?? fs.readFileSync(0, 'utf8'))

const stderrLogger = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`kafkajs ${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

async function main() {
  const command = readCommand()
  const kafka = new Kafka({
    clientId: 'odradek-kafkajs-tests',
    brokers: command.brokers,
    ssl: command.ssl,
    sasl: command.sasl,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 100, retries: 3 },
    logLevel: logLevel.WARN,
    logCreator: stderrLogger,
  })
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  const admin = kafka.admin()
  let producerConnected = false
  await admin.connect()

  const run = async ({ op, args }) => {
    if (op === 'produce') {
      if (!producerConnected) {
        await producer.connect()
        producerConnected = true
      }
      const { topic, messages, acks, compression, timeout } = args
      return producer.send({
        topic,
        messages: messages.map(toMessage),
        acks,
        timeout,
        compression: CompressionTypes[compression ?? 'None'],
      })
    }
    if (op === 'consume') return consume(kafka, args)
    if (!ADMIN_OPS.has(op)) throw new Error(`unknown op ${op}`)
    return admin[op](...withResourceTypes(args ?? []))
  }

  const results = []
  try {
    for (const step of command.steps) {
      try {
        const value = await run(step)
        results.push({ ok: value === undefined ? null : value })
      } catch (error) {
        results.push({ error: describeError(error) })
      }
    }
  } finally {
    if (producerConnected) await producer.disconnect()
    await admin.disconnect()
  }
  process.stdout.write(JSON.stringify({ results }, jsonReplacer) + '\n')
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`)
  process.exit(2)
})
