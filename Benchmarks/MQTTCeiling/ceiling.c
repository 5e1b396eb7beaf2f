// restock-ceiling: the C ceiling of `make bench` — what mosquitto and libmosquitto carry on this machine.
//
//   restock-ceiling PORT COUNT SIZE [TIMEOUT_SECONDS]
//
// One process, two libmosquitto clients on 127.0.0.1:PORT, each with its own network thread
// (mosquitto_loop_start), both MQTT v5:
// - a subscriber on `ceiling/+/alerts` at QoS 1 that counts what arrives (libmosquitto's defaults otherwise,
//   as mosquitto_sub has them: receive maximum 20);
// - a publisher, set up like the store's own client (TCP_NODELAY, send maximum 1,000), that publishes COUNT
//   messages of SIZE bytes at QoS 1 to `ceiling/c/alerts`, never more than 1,000 unacknowledged (PUBACKs
//   counted in on_publish).
// Publishing starts once the subscriber has its SUBACK and the publisher its CONNACK. Timed from just before
// the first publish to the COUNT-th distinct message counted at the subscriber. Then an end marker is sent
// after them and awaited, so nothing more can be on its way, and the counts are checked: exactly COUNT
// delivered, each once.
//
// Prints one line on standard output and exits 0: `ok COUNT NANOSECONDS`; or `error: …` and exits 1. Every
// wait has the deadline TIMEOUT_SECONDS (default 300) from the start.
//
//   restock-ceiling relay PORT FILE [TIMEOUT_SECONDS]
//
// The floor of B4's path instead: two hops through the broker and one fdatasync, as a relay (relay.c).
#include <errno.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"

enum { MAX_UNACKNOWLEDGED = 1000, ID_LENGTH = 16 };
static const char *const topic = "ceiling/c/alerts";
static const char *const filter = "ceiling/+/alerts";
static const char end_marker[] = "end";

/// Everything the callbacks and the main thread share, under `lock`; `changed` is signalled on every change.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool subscriber_connected, subscribed, publisher_connected, end_seen;
    char failure[256];
    long count, unacknowledged, acknowledged;
    long delivered, distinct, strays;
    unsigned char *seen;
    uint64_t last_at;
} shared = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

/// Records the first failure (under the lock) and wakes the main thread.
static void fail_locked(const char *format, ...) {
    if (shared.failure[0] == '\0') {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(shared.failure, sizeof shared.failure, format, arguments);
        va_end(arguments);
    }
    pthread_cond_broadcast(&shared.changed);
}

/// Both clients' CONNACK (`context` is the client's role); the subscriber subscribes on it.
static void on_connect(struct mosquitto *mosq, void *context, int reason, int flags, const mosquitto_property *properties) {
    (void)flags, (void)properties;
    const char *role = context;
    bool is_subscriber = strcmp(role, "subscriber") == 0;
    bool *connected = is_subscriber ? &shared.subscriber_connected : &shared.publisher_connected;
    pthread_mutex_lock(&shared.lock);
    if (reason != 0) {
        fail_locked("%s refused: %s", role, mosquitto_reason_string(reason));
    } else if (*connected) {
        fail_locked("%s reconnected: messages may be lost", role);
    } else {
        *connected = true;
        int rc = is_subscriber ? mosquitto_subscribe(mosq, NULL, filter, 1) : MOSQ_ERR_SUCCESS;
        if (rc != MOSQ_ERR_SUCCESS) fail_locked("subscribe: %s", mosquitto_strerror(rc));
        pthread_cond_broadcast(&shared.changed);
    }
    pthread_mutex_unlock(&shared.lock);
}

static void on_subscribe(struct mosquitto *mosq, void *context, int mid, int count, const int *granted) {
    (void)mosq, (void)context, (void)mid;
    pthread_mutex_lock(&shared.lock);
    if (count != 1 || granted[0] != 1) {
        fail_locked("subscription not granted at QoS 1 (%d)", count > 0 ? granted[0] : -1);
    } else {
        shared.subscribed = true;
        pthread_cond_broadcast(&shared.changed);
    }
    pthread_mutex_unlock(&shared.lock);
}

static void on_message(struct mosquitto *mosq, void *context, const struct mosquitto_message *message) {
    (void)mosq, (void)context;
    uint64_t at = now_ns();
    const char *payload = message->payload;
    pthread_mutex_lock(&shared.lock);
    if (message->payloadlen == (int)strlen(end_marker) && memcmp(payload, end_marker, strlen(end_marker)) == 0) {
        shared.end_seen = true;
        pthread_cond_broadcast(&shared.changed);
    } else if (message->payloadlen >= ID_LENGTH && payload[0] == 'm') {
        long index = 0;
        for (int i = 1; i < ID_LENGTH; i++) index = index * 10 + (payload[i] - '0');
        shared.delivered++;
        if (index >= 0 && index < shared.count && !shared.seen[index]) {
            shared.seen[index] = 1;
            if (++shared.distinct == shared.count) {
                shared.last_at = at;
                pthread_cond_broadcast(&shared.changed);
            }
        }
    } else {
        shared.strays++;
    }
    pthread_mutex_unlock(&shared.lock);
}

static void on_publish(struct mosquitto *mosq, void *context, int mid, int reason, const mosquitto_property *properties) {
    (void)mosq, (void)context, (void)mid, (void)properties;
    pthread_mutex_lock(&shared.lock);
    if (reason != 0) fail_locked("publish refused: %s", mosquitto_reason_string(reason));
    shared.unacknowledged--;
    shared.acknowledged++;
    pthread_cond_broadcast(&shared.changed);
    pthread_mutex_unlock(&shared.lock);
}

static void on_disconnect(struct mosquitto *mosq, void *context, int reason, const mosquitto_property *properties) {
    (void)mosq, (void)properties;
    pthread_mutex_lock(&shared.lock);
    if (reason != 0) fail_locked("%s lost its connection: %s", (const char *)context, mosquitto_reason_string(reason));
    pthread_mutex_unlock(&shared.lock);
}

/// Waits (under the lock) until `condition` holds or a failure is recorded; records one at `deadline`.
static bool wait_locked(bool (*condition)(void), const struct timespec *deadline, const char *what) {
    while (shared.failure[0] == '\0' && !condition()) {
        if (pthread_cond_timedwait(&shared.changed, &shared.lock, deadline) == ETIMEDOUT && !condition()) {
            fail_locked("deadline passed waiting for %s", what);
        }
    }
    return shared.failure[0] == '\0';
}

static bool is_ready(void) { return shared.subscribed && shared.publisher_connected; }
static bool has_room(void) { return shared.unacknowledged < MAX_UNACKNOWLEDGED; }
static bool has_all(void) { return shared.distinct >= shared.count; }
static bool has_end(void) { return shared.end_seen && shared.acknowledged == shared.count + 1; }

/// A v5 client with its callbacks, connecting in the background on its own network thread.
static struct mosquitto *start_client(const char *role, int port) {
    char id[64];
    snprintf(id, sizeof id, "restock-ceiling-%s-%ld", role, (long)getpid());
    struct mosquitto *mosq = mosquitto_new(id, true, (void *)role);
    if (mosq == NULL) return NULL;
    mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_connect_v5_callback_set(mosq, on_connect);
    mosquitto_disconnect_v5_callback_set(mosq, on_disconnect);
    if (strcmp(role, "publisher") == 0) {
        mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1);
        mosquitto_int_option(mosq, MOSQ_OPT_SEND_MAXIMUM, MAX_UNACKNOWLEDGED);
        mosquitto_publish_v5_callback_set(mosq, on_publish);
    } else {
        mosquitto_subscribe_callback_set(mosq, on_subscribe);
        mosquitto_message_callback_set(mosq, on_message);
    }
    if (mosquitto_connect_bind_async(mosq, "127.0.0.1", port, 60, NULL) != MOSQ_ERR_SUCCESS || mosquitto_loop_start(mosq) != MOSQ_ERR_SUCCESS) {
        mosquitto_destroy(mosq);
        return NULL;
    }
    return mosq;
}

static void stop_client(struct mosquitto *mosq) {
    if (mosq == NULL) return;
    mosquitto_disconnect(mosq);
    mosquitto_loop_stop(mosq, false);
    mosquitto_destroy(mosq);
}

static long parse_count(const char *text, long minimum, long maximum) {
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    return (errno != 0 || end == text || *end != '\0' || value < minimum || value > maximum) ? -1 : value;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "relay") == 0) return relay_main(argc, argv);
    long port = argc >= 4 ? parse_count(argv[1], 1, 65535) : -1;
    long count = argc >= 4 ? parse_count(argv[2], 1, 999999999999999L) : -1;
    long size = argc >= 4 ? parse_count(argv[3], ID_LENGTH, 1 << 20) : -1;
    long timeout = argc >= 5 ? parse_count(argv[4], 1, 86400) : 300;
    if (argc < 4 || argc > 5 || port < 0 || count < 0 || size < 0 || timeout < 0) {
        printf("error: usage: restock-ceiling PORT COUNT SIZE(%d or more) [TIMEOUT_SECONDS]\n", ID_LENGTH);
        return 1;
    }
    shared.count = count;
    shared.seen = calloc((size_t)count, 1);
    char *payload = malloc((size_t)size + 1);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&shared.changed, &attributes);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout;

    mosquitto_lib_init();
    struct mosquitto *subscriber = start_client("subscriber", (int)port);
    struct mosquitto *publisher = start_client("publisher", (int)port);
    pthread_mutex_lock(&shared.lock);
    if (shared.seen == NULL || payload == NULL || subscriber == NULL || publisher == NULL) fail_locked("could not start both clients on 127.0.0.1:%ld", port);
    wait_locked(is_ready, &deadline, "the subscription and the publisher's connection");
    pthread_mutex_unlock(&shared.lock);

    memset(payload, 'x', (size_t)size);
    uint64_t start = now_ns();
    for (long index = 0; index < count; index++) {
        pthread_mutex_lock(&shared.lock);
        bool ready = wait_locked(has_room, &deadline, "PUBACKs");
        if (ready) shared.unacknowledged++;
        pthread_mutex_unlock(&shared.lock);
        if (!ready) break;
        char id[ID_LENGTH + 1];
        snprintf(id, sizeof id, "m%015ld", index);
        memcpy(payload, id, ID_LENGTH);
        int rc = mosquitto_publish(publisher, NULL, topic, (int)size, payload, 1, false);
        if (rc != MOSQ_ERR_SUCCESS) {
            pthread_mutex_lock(&shared.lock);
            fail_locked("publish: %s", mosquitto_strerror(rc));
            pthread_mutex_unlock(&shared.lock);
            break;
        }
    }

    pthread_mutex_lock(&shared.lock);
    bool complete = wait_locked(has_all, &deadline, "every message at the subscriber");
    uint64_t elapsed = shared.last_at - start;
    pthread_mutex_unlock(&shared.lock);
    int rc = complete ? mosquitto_publish(publisher, NULL, topic, (int)strlen(end_marker), end_marker, 1, false) : MOSQ_ERR_SUCCESS;
    pthread_mutex_lock(&shared.lock);
    if (rc != MOSQ_ERR_SUCCESS) fail_locked("publish: %s", mosquitto_strerror(rc));
    if (complete && wait_locked(has_end, &deadline, "the end marker and every PUBACK")) {
        if (shared.delivered != count || shared.distinct != count || shared.strays != 0) {
            fail_locked("sent %ld, delivered %ld (%ld distinct), %ld unexpected", count, shared.delivered, shared.distinct, shared.strays);
        }
    }
    char failure[sizeof shared.failure];
    memcpy(failure, shared.failure, sizeof failure);
    long distinct = shared.distinct;
    pthread_mutex_unlock(&shared.lock);

    // Disconnecting is not a failure: from here on on_disconnect records nothing that is printed.
    stop_client(publisher);
    stop_client(subscriber);
    mosquitto_lib_cleanup();
    free(payload);
    free(shared.seen);
    if (failure[0] != '\0') {
        printf("error: %s (%ld of %ld counted)\n", failure, distinct, count);
        return 1;
    }
    printf("ok %ld %llu\n", count, (unsigned long long)elapsed);
    return 0;
}
