/*
 * restock_clientid — a mosquitto 2 plugin that binds RestockAlerter's client ids to their users.
 *
 * mosquitto resumes a persistent session for whoever connects with its client id, and its ACL cannot tie a
 * client id to a user name. Without this plugin any authenticated user can connect as another customer's
 * listening session: the broker hands them that session (and drops what the ACL does not let them read), and
 * the customer loses the alerts queued in it.
 *
 * The rule, checked when a client connects, before the broker touches any session:
 *   restock:{store}             only the user store-{store}            (the store's own session)
 *   restock:{store}:@{instance} only the user store-{store}            (a store process's publishing connection)
 *   restock:{store}:{customer}  only the user {customer}               (a customer's listening session)
 *   any other id starting with "restock:"                              refused
 *   any id not starting with "restock:"                                 left to the password file
 * Store and customer ids never contain ':' and never start with '@', so each client id in the namespace names
 * exactly one user. An identifier's '.' is written '~' in a client id (NATS refuses '.'; no identifier holds a
 * '~'): restock:apple:j~doe is the user j.doe's, and so is restock:apple:j.doe, the id of before, which the
 * customer's next listen takes what it holds from and ends (docs/contract.md, "Sessions and client ids").
 * An allowed client id is not yet a login: the plugin defers, and the password file decides as before.
 *
 * Build: deploy/mosquitto/clientid-plugin/build.sh OUTPUT.so (needs Debian's mosquitto-dev and a C compiler).
 * Use:   plugin /path/to/restock_clientid.so   in mosquitto.conf (deploy/mosquitto/mosquitto.conf does).
 */
#include <stddef.h>
#include <string.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>

#define NAMESPACE "restock:"
#define STORE_USER_PREFIX "store-"

static mosquitto_plugin_id_t *plugin_identifier = NULL;

/* Whether the client id part `part` (`length` bytes) names the identifier `name`: the same bytes, but that a '~'
 * stands for a '.' only (so no user whose name holds a '~' owns a dotted customer's session). */
static int part_names(const char *part, size_t length, const char *name)
{
    if (strlen(name) != length) {
        return 0;
    }
    for (size_t index = 0; index < length; index++) {
        if (part[index] == '~' ? name[index] != '.' : part[index] != name[index]) {
            return 0;
        }
    }
    return 1;
}

/* Whether `user` is store-{the store named by `store`, `length` bytes}. */
static int store_user(const char *user, const char *store, size_t length)
{
    return length > 0
        && strncmp(user, STORE_USER_PREFIX, strlen(STORE_USER_PREFIX)) == 0
        && part_names(store, length, user + strlen(STORE_USER_PREFIX));
}

/* Whether `user` may connect with `client_id`; ids outside the namespace are always allowed here. */
static int client_id_allowed(const char *client_id, const char *user)
{
    if (client_id == NULL || strncmp(client_id, NAMESPACE, strlen(NAMESPACE)) != 0) {
        return 1;
    }
    if (user == NULL) {
        return 0; /* an anonymous client never owns a session in the namespace */
    }
    const char *store = client_id + strlen(NAMESPACE);
    const char *separator = strchr(store, ':');
    if (separator == NULL) {
        /* restock:{store}: the store's user is store-{store}. */
        return store_user(user, store, strlen(store));
    }
    const char *customer = separator + 1;
    if (customer[0] == '@') {
        /* restock:{store}:@{instance}: a publishing connection of the store, whose user is store-{store}. */
        return customer[1] != '\0'
            && strchr(customer, ':') == NULL
            && store_user(user, store, (size_t)(separator - store));
    }
    /* restock:{store}:{customer}: the customer's user name is the customer id. */
    return separator != store
        && customer[0] != '\0'
        && strchr(customer, ':') == NULL
        && part_names(customer, strlen(customer), user);
}

static int on_basic_auth(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)userdata;
    const struct mosquitto_evt_basic_auth *data = event_data;
    const char *client_id = mosquitto_client_id(data->client);
    if (client_id_allowed(client_id, data->username)) {
        return MOSQ_ERR_PLUGIN_DEFER; /* the password file decides */
    }
    mosquitto_log_printf(MOSQ_LOG_NOTICE, "restock_clientid: refused client id %s for user %s: it belongs to another user",
        client_id, data->username != NULL ? data->username : "(anonymous)");
    return MOSQ_ERR_AUTH;
}

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions)
{
    for (int index = 0; index < supported_version_count; index++) {
        if (supported_versions[index] == 5) {
            return 5;
        }
    }
    return -1;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata, struct mosquitto_opt *options, int option_count)
{
    (void)userdata;
    (void)options;
    (void)option_count;
    plugin_identifier = identifier;
    return mosquitto_callback_register(plugin_identifier, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL, NULL);
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count)
{
    (void)userdata;
    (void)options;
    (void)option_count;
    return mosquitto_callback_unregister(plugin_identifier, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL);
}
