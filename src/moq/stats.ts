const NO_ERRORS: ReadonlyMap<string, number> = new Map();

/** Counters one moq session keeps; read them any time (the relay's metrics do). */
export class MoqStats {
  /** Bytes written to the transport's streams. */
  bytesSent = 0;
  /** Bytes read from the transport's streams. */
  bytesReceived = 0;
  /** Subscriptions the peer opened that we serve (accepted). */
  subscriptionsOpened = 0;
  /**
   * Of those, tracks we pushed (IETF PUBLISH) that the peer had forwarded:
   * served without a SUBSCRIBE of its own.
   */
  tracksPushed = 0;
  /** Served subscriptions that ended. */
  subscriptionsClosed = 0;
  /** Subscriptions we opened to the peer. */
  upstreamSubscriptionsOpened = 0;
  /** Our subscriptions to the peer that ended. */
  upstreamSubscriptionsClosed = 0;
  // Made at the first error: most sessions never have one.
  #subscribeErrors: Map<string, number> | undefined;
  /** Groups sent on group streams. */
  groupsSent = 0;
  /** Groups sent as datagrams (lite-05, tracks chosen by the `datagrams` option). */
  datagramsSent = 0;
  /** Groups of datagram tracks sent on streams instead: several frames, or too large for a datagram. */
  datagramFallbacks = 0;
  /** Last groups of a burst sent again on a stream, so a lost final datagram is noticed. */
  datagramTailRepeats = 0;
  /** Datagrams received that carried a group of one of our subscriptions. */
  datagramsReceived = 0;
  /** Groups received complete. */
  groupsReceived = 0;
  /** Groups not delivered because a subscriber (ours or the peer) fell behind. */
  groupsSkipped = 0;
  /** Group streams we reset: the publisher abandoned the group, or it outlived the max latency. */
  groupsReset = 0;
  /** Groups not started (or reset while sent) because they outlived the subscriber's max latency. */
  groupsExpired = 0;
  /** Peer announcements refused by the `acceptAnnounce` policy. */
  announcementsRefused = 0;
  /** Streams or sessions ended because of the peer's malformed or hostile input. */
  protocolErrors = 0;

  /** Refused or failed subscribe requests from the peer, by reason. */
  get subscribeErrors(): ReadonlyMap<string, number> {
    return this.#subscribeErrors ?? NO_ERRORS;
  }

  /** Counts one subscribe error. */
  subscribeError(reason: string): void {
    const errors = this.#subscribeErrors ??= new Map();
    errors.set(reason, (errors.get(reason) ?? 0) + 1);
  }
}
