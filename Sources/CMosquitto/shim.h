#ifndef CMOSQUITTO_SHIM_H
#define CMOSQUITTO_SHIM_H

#include <stdbool.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

/* The CONNACK flags' "session present" bit, which Swift cannot name. */
static inline bool cmosquitto_session_present(int flags) {
    return (flags & 0x01) != 0;
}

/* Whether an MQTT v5 reason code is a refusal (0x80 and above). */
static inline bool cmosquitto_reason_is_failure(int reason_code) {
    return reason_code >= 0x80;
}

#endif
