// restock-ceiling relay: the physical floor of B4's path (issue 35), measured as a path — two trips through the
// broker and one fdatasync on the data disk, done by the least code that can do them.
//
//   restock-ceiling relay PORT FILE [TIMEOUT_SECONDS]
//
// One libmosquitto client on 127.0.0.1:PORT (MQTT v5, TCP_NODELAY, its own network thread), subscribed to
// `relay/in` at QoS 1. For each message it receives, on the network thread, as the store's network thread syncs its
// request log: one 4 KiB page appended to FILE and `fdatasync`ed; then, unless the payload is `reset` (the store's
// `{"set":0}`, synced and alerting no one), the payload published to `relay/out` at QoS 1. So a message published to
// `relay/in` reaches a subscriber of `relay/out` after two hops and one sync, at whatever pace it is sent.
//
// Prints `ready` once subscribed; on a failure prints `error: …` and exits 1. Exits 0 when its standard input closes.
// The subscription must be granted within TIMEOUT_SECONDS (default 30). FILE is created, and removed at the end.
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <mosquitto.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PAGE = 4096, PAGES_BEFORE_REWIND = 1024 };
static const char *const in_topic = "relay/in";
static const char *const out_topic = "relay/out";
static const char reset_payload[] = "reset";

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool subscribed;
    char failure[256];
    int file;
    long pages;
    unsigned char page[PAGE];
} relay = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER, .file = -1};

/// Records the first failure, prints it and wakes the main thread, which exits.
static void relay_fail(const char *what, const char *why) {
    pthread_mutex_lock(&relay.lock);
    if (relay.failure[0] == '\0') {
        snprintf(relay.failure, sizeof relay.failure, "%s: %s", what, why);
        printf("error: %s\n", relay.failure);
        fflush(stdout);
    }
    pthread_cond_broadcast(&relay.changed);
    pthread_mutex_unlock(&relay.lock);
}

static void relay_on_connect(struct mosquitto *mosq, void *context, int reason, int flags, const mosquitto_property *properties) {
    (void)context, (void)flags, (void)properties;
    if (reason != 0) {
        relay_fail("connect", mosquitto_reason_string(reason));
        return;
    }
    int rc = mosquitto_subscribe(mosq, NULL, in_topic, 1);
    if (rc != MOSQ_ERR_SUCCESS) relay_fail("subscribe", mosquitto_strerror(rc));
}

static void relay_on_subscribe(struct mosquitto *mosq, void *context, int mid, int count, const int *granted) {
    (void)mosq, (void)context, (void)mid;
    if (count != 1 || granted[0] != 1) {
        relay_fail("subscribe", "not granted at QoS 1");
        return;
    }
    pthread_mutex_lock(&relay.lock);
    relay.subscribed = true;
    pthread_cond_broadcast(&relay.changed);
    pthread_mutex_unlock(&relay.lock);
    printf("ready\n");
    fflush(stdout);
}

/// The path itself: one page appended and synced, then the payload passed on. The file is rewound now and then, so
/// that it stays small; each write still extends it past its end, as a log's append does.
static void relay_on_message(struct mosquitto *mosq, void *context, const struct mosquitto_message *message) {
    (void)context;
    off_t offset = (off_t)(relay.pages % PAGES_BEFORE_REWIND) * PAGE;
    if (relay.pages % PAGES_BEFORE_REWIND == 0 && ftruncate(relay.file, 0) != 0) {
        relay_fail("truncate", strerror(errno));
        return;
    }
    relay.pages++;
    if (pwrite(relay.file, relay.page, PAGE, offset) != PAGE || fdatasync(relay.file) != 0) {
        relay_fail("write and sync", strerror(errno));
        return;
    }
    bool is_reset = message->payloadlen == (int)strlen(reset_payload) && memcmp(message->payload, reset_payload, strlen(reset_payload)) == 0;
    if (is_reset) return;
    int rc = mosquitto_publish(mosq, NULL, out_topic, message->payloadlen, message->payload, 1, false);
    if (rc != MOSQ_ERR_SUCCESS) relay_fail("publish", mosquitto_strerror(rc));
}

static void relay_on_disconnect(struct mosquitto *mosq, void *context, int reason, const mosquitto_property *properties) {
    (void)mosq, (void)context, (void)properties;
    if (reason != 0) relay_fail("connection lost", mosquitto_reason_string(reason));
}

int relay_main(int argc, char **argv) {
    char *end = NULL;
    long port = argc >= 4 ? strtol(argv[2], &end, 10) : -1;
    bool port_valid = argc >= 4 && end != argv[2] && *end == '\0' && port >= 1 && port <= 65535;
    long timeout = argc >= 5 ? strtol(argv[4], &end, 10) : 30;
    bool timeout_valid = argc < 5 || (end != argv[4] && *end == '\0' && timeout >= 1 && timeout <= 86400);
    if (argc < 4 || argc > 5 || !port_valid || !timeout_valid) {
        printf("error: usage: restock-ceiling relay PORT FILE [TIMEOUT_SECONDS]\n");
        return 1;
    }
    const char *path = argv[3];
    relay.file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (relay.file < 0) {
        printf("error: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    memset(relay.page, 0x5A, PAGE);

    mosquitto_lib_init();
    char id[64];
    snprintf(id, sizeof id, "restock-ceiling-relay-%ld", (long)getpid());
    struct mosquitto *mosq = mosquitto_new(id, true, NULL);
    int status = 1;
    if (mosq == NULL) {
        printf("error: cannot make a client\n");
    } else {
        mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
        mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1);
        mosquitto_connect_v5_callback_set(mosq, relay_on_connect);
        mosquitto_subscribe_callback_set(mosq, relay_on_subscribe);
        mosquitto_message_callback_set(mosq, relay_on_message);
        mosquitto_disconnect_v5_callback_set(mosq, relay_on_disconnect);
        if (mosquitto_connect_bind_async(mosq, "127.0.0.1", (int)port, 60, NULL) != MOSQ_ERR_SUCCESS || mosquitto_loop_start(mosq) != MOSQ_ERR_SUCCESS) {
            printf("error: cannot connect to 127.0.0.1:%ld\n", port);
        } else {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += timeout;
            pthread_mutex_lock(&relay.lock);
            while (!relay.subscribed && relay.failure[0] == '\0') {
                if (pthread_cond_timedwait(&relay.changed, &relay.lock, &deadline) == ETIMEDOUT) break;
            }
            bool ready = relay.subscribed && relay.failure[0] == '\0';
            bool timed_out = !relay.subscribed && relay.failure[0] == '\0';
            pthread_mutex_unlock(&relay.lock);
            if (timed_out) printf("error: no subscription within %ld s\n", timeout);
            // Relays until its standard input closes (the bench stops it so) or a failure.
            char discard[256];
            while (ready && read(STDIN_FILENO, discard, sizeof discard) > 0) {}
            pthread_mutex_lock(&relay.lock);
            status = ready && relay.failure[0] == '\0' ? 0 : 1;
            pthread_mutex_unlock(&relay.lock);
            mosquitto_disconnect(mosq);
            mosquitto_loop_stop(mosq, false);
        }
        mosquitto_destroy(mosq);
    }
    mosquitto_lib_cleanup();
    close(relay.file);
    unlink(path);
    return status;
}
