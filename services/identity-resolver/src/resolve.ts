import { profileIdsFor, signalKey, type EventIdentity, type MergeReason, type SignalType } from '@svc/identity';

/**
 * Identity resolution rules, on an in-memory view of one organisation's
 * identity graph (the signals and profiles a batch touches, loaded under
 * lock). No I/O: the caller loads the graph, runs every event of the batch
 * through `resolveEvent` in order, and writes what the graph recorded.
 *
 * | event carries                           | goes to                                  | and                                                   |
 * |-----------------------------------------|------------------------------------------|-------------------------------------------------------|
 * | userId known                            | that user's profile (`user_id`)          | anonymous profiles of its other signals merge into it |
 * | userId new, an anonymous profile matches| that profile, now identified (email > phone > anonymous_id) | other anonymous matches merge into it  |
 * | userId new, nothing anonymous matches   | a new profile for the user (`new_profile`)| the device's profile, identified as someone else, is left alone (shared device) |
 * | no userId, signals match                | the strongest match, identified ones first (email > phone > anonymous_id) | anonymous matches merge into it (trait stitching) |
 * | no userId, nothing matches              | a new profile (`new_profile`)            |                                                       |
 * | alias, previousId ≠ userId, anonymousId | as above for userId                      | previousId's profile merges into it; an unknown previousId becomes a user_id signal of it |
 *
 * Two identified profiles are never merged by an identify or a trait: only
 * alias and the admin merge do that. A signal already owned by a profile the
 * event does not go to stays where it is.
 */

/** Which signal found the event's profile, or that a new one was made (stored as events.resolution_method). */
export type ResolutionMethod = SignalType | 'new_profile';


export interface ProfileNode {
  id: string;
  canonicalId: string;
  userId: string | null;
  /** Made in this batch, not yet in the database. */
  isNew: boolean;
  mergedInto: string | null;
}

export interface PlannedMerge {
  sourceId: string;
  targetId: string;
  reason: MergeReason;
  /** The identifier the event shared with the source (alias: the previousId's kind). */
  signalType: SignalType;
  messageId: string;
}

export interface Resolution {
  /** The profile the event went to when it was resolved; `graph.find` gives where it ends up. */
  profileId: string;
  method: ResolutionMethod;
}

export class IdentityGraph {
  /** Signals made by this batch, in order, with the profile they were attached to. */
  readonly attached = new Map<string, { type: SignalType; value: string; profileId: string }>();
  readonly merges: PlannedMerge[] = [];
  readonly created: ProfileNode[] = [];

  constructor(
    readonly orgId: string,
    /** Known signals (signalKey → profile id) for every signal the batch carries. */
    private readonly signals: Map<string, string>,
    /** Every profile those signals point to, loaded under lock. */
    private readonly profiles: Map<string, ProfileNode>,
  ) {}

  /** The surviving profile a (possibly merged-away) profile id stands for. */
  find(id: string): string {
    let current = id;
    for (let hops = 0; hops < 64; hops++) {
      const next = this.profiles.get(current)?.mergedInto;
      if (!next) return current;
      current = next;
    }
    throw new Error(`merge chain from profile ${id} does not end`);
  }

  profile(id: string): ProfileNode {
    const node = this.profiles.get(this.find(id));
    if (!node) throw new Error(`profile ${id} is not in the loaded graph`);
    return node;
  }

  /** The surviving profile that owns the signal, if any. */
  owner(type: SignalType, value: string | null): string | undefined {
    if (value === null) return undefined;
    const id = this.signals.get(signalKey(type, value));
    return id === undefined ? undefined : this.find(id);
  }

  identified(id: string): boolean {
    return this.profile(id).userId !== null;
  }

  private create(seedType: SignalType, seedValue: string): string {
    const ids = profileIdsFor(this.orgId, seedType, seedValue);
    if (this.profiles.has(ids.id)) throw new Error(`profile seed ${seedType} reused in one batch`);
    const node: ProfileNode = { ...ids, userId: null, isNew: true, mergedInto: null };
    this.profiles.set(node.id, node);
    this.created.push(node);
    return node.id;
  }

  private attach(type: SignalType, value: string, profileId: string): void {
    const key = signalKey(type, value);
    if (this.signals.has(key)) return;
    this.signals.set(key, profileId);
    this.attached.set(key, { type, value, profileId });
    if (type === 'user_id') {
      const node = this.profile(profileId);
      node.userId ??= value;
    }
  }

  private merge(sourceId: string, targetId: string, reason: MergeReason, signalType: SignalType, messageId: string): void {
    const source = this.profile(sourceId);
    const target = this.profile(targetId);
    if (source.id === target.id) return;
    source.mergedInto = target.id;
    target.userId ??= source.userId;
    this.merges.push({ sourceId: source.id, targetId: target.id, reason, signalType, messageId });
  }

  /** Resolves one event, updating the graph. Events must come in partition order. */
  resolveEvent(identity: EventIdentity, messageId: string): Resolution {
    const { anonymousId, userId, email, phone, previousId } = identity;
    const others: Array<[SignalType, string | null, string | undefined]> = [
      ['email', email, this.owner('email', email)],
      ['phone', phone, this.owner('phone', phone)],
      ['anonymous_id', anonymousId, this.owner('anonymous_id', anonymousId)],
    ];
    let target: string;
    let method: ResolutionMethod;

    if (userId !== null) {
      const known = this.owner('user_id', userId);
      const anonymous = others.find(([, , owner]) => owner !== undefined && !this.identified(owner));
      if (known !== undefined) {
        target = known;
        method = 'user_id';
      } else if (anonymous?.[2] !== undefined) {
        target = anonymous[2];
        method = anonymous[0];
      } else {
        target = this.create('user_id', userId);
        method = 'new_profile';
      }
      this.attach('user_id', userId, target);
    } else {
      const matched = others.filter(([, , owner]) => owner !== undefined);
      const pick = matched.find(([, , owner]) => this.identified(owner!)) ?? matched[0];
      if (pick?.[2] !== undefined) {
        target = pick[2];
        method = pick[0];
      } else {
        target = this.create('anonymous_id', anonymousId);
        method = 'new_profile';
      }
    }

    for (const [type, value, owner] of others) {
      if (value === null) continue;
      const current = owner === undefined ? undefined : this.find(owner);
      if (current === undefined) this.attach(type, value, target);
      else if (current !== this.find(target) && !this.identified(current)) {
        this.merge(current, target, userId !== null ? 'identify' : 'trait', type, messageId);
      }
    }

    if (previousId !== null && userId !== null) {
      const asUser = this.owner('user_id', previousId);
      const previous = asUser ?? this.owner('anonymous_id', previousId);
      if (previous === undefined) this.attach('user_id', previousId, target);
      else this.merge(previous, target, 'alias', asUser !== undefined ? 'user_id' : 'anonymous_id', messageId);
    }
    return { profileId: target, method };
  }
}
