import {
  DEFAULT_IDENTITY_RULES,
  profileIdsFor,
  signalKey,
  type CompiledIdentityRules,
  type EventIdentity,
  type KeptApartPair,
  type MergeReason,
  type ResolutionMethod,
  type SignalCounts,
  type SignalType,
  type WarningKind,
} from '@svc/identity';

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
 *
 * The organisation's identity rules (libs/identity identity-rules.ts) order
 * email, phone and anonymousId (`priority`; the table's order is the
 * default), and cap how many identifiers of a type one profile holds
 * (`limits`): a signal that would go over is not attached, and a merge that
 * would take the survivor over is refused; the event is stored all the same,
 * and each is a warning (`warnings`). Blocked values never reach the graph
 * (prepare.ts leaves them out of the event's identity). Profiles an unmerge
 * split are kept apart the same way: a merge that would join them again is
 * refused.
 */


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

/** Something the rules kept the graph from doing, for the organisation's ingestion warnings. */
export interface GraphWarning {
  messageId: string;
  kind: Extract<WarningKind, 'identity_limit' | 'merge_refused'>;
  detail: string;
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
  readonly warnings: GraphWarning[] = [];
  /** Signals per type of each profile, once asked for: the stored ones, plus what the batch attached and merged. */
  private readonly counts = new Map<string, Partial<Record<SignalType, number>>>();

  constructor(
    readonly orgId: string,
    /** Known signals (signalKey → profile id) for every signal the batch carries. */
    private readonly signals: Map<string, string>,
    /** Every profile those signals point to, loaded under lock. */
    private readonly profiles: Map<string, ProfileNode>,
    private readonly rules: Pick<CompiledIdentityRules, 'limits' | 'priority'> = DEFAULT_IDENTITY_RULES,
    /** The loaded profiles' stored signal counts; needed only when the rules set limits. */
    private readonly storedCounts: SignalCounts = new Map(),
    /** Identifiers an unmerge split: no profile comes to hold both, by a merge or by attaching one. */
    keptApart: readonly KeptApartPair[] = [],
  ) {
    for (const { a, b } of keptApart) {
      const [ka, kb] = [signalKey(a.type, a.value), signalKey(b.type, b.value)];
      // Their holders are known, so that a merge joining them is seen whatever else the batch carries.
      if (a.owner !== null && !this.signals.has(ka)) this.signals.set(ka, a.owner);
      if (b.owner !== null && !this.signals.has(kb)) this.signals.set(kb, b.owner);
      this.apart.set(ka, [...(this.apart.get(ka) ?? []), kb]);
      this.apart.set(kb, [...(this.apart.get(kb) ?? []), ka]);
    }
  }

  /** signalKey → the signalKeys no profile may hold together with it (kept-apart pairs). */
  private readonly apart = new Map<string, string[]>();

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

  /** The signals per type the surviving profile `id` holds now. */
  private countsOf(id: string): Partial<Record<SignalType, number>> {
    let counts = this.counts.get(id);
    if (!counts) {
      counts = { ...this.storedCounts.get(id) };
      this.counts.set(id, counts);
    }
    return counts;
  }

  private attach(type: SignalType, value: string, profileId: string, messageId: string): void {
    const key = signalKey(type, value);
    if (this.signals.has(key)) return;
    if (this.keptApartFrom(this.find(profileId), key)) {
      this.warnings.push({ messageId, kind: 'merge_refused', detail: `${type} not added to ${this.find(profileId)}: an unmerge keeps it apart from an identifier the profile holds` });
      return;
    }
    const limit = this.rules.limits[type];
    if (limit !== undefined) {
      const counts = this.countsOf(this.find(profileId));
      if ((counts[type] ?? 0) >= limit) {
        this.warnings.push({ messageId, kind: 'identity_limit', detail: `${type}: the profile holds ${limit}, the most the rules allow` });
        return;
      }
      counts[type] = (counts[type] ?? 0) + 1;
    }
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
    if (this.apart.size > 0 && this.splitByUnmerge(source.id, target.id)) {
      this.warnings.push({ messageId, kind: 'merge_refused', detail: `${reason} of ${source.id} into ${target.id}: an unmerge keeps them apart` });
      return;
    }
    const limits = Object.entries(this.rules.limits) as Array<[SignalType, number]>;
    if (limits.length > 0) {
      const [from, into] = [this.countsOf(source.id), this.countsOf(target.id)];
      const over = limits.find(([type, limit]) => (from[type] ?? 0) + (into[type] ?? 0) > limit);
      if (over) {
        this.warnings.push({ messageId, kind: 'merge_refused', detail: `${reason} of ${source.id} into ${target.id}: together they would hold more than ${over[1]} ${over[0]}` });
        return;
      }
      for (const [type] of limits) into[type] = (from[type] ?? 0) + (into[type] ?? 0);
    }
    source.mergedInto = target.id;
    target.userId ??= source.userId;
    this.merges.push({ sourceId: source.id, targetId: target.id, reason, signalType, messageId });
  }

  /** Whether the surviving profile holds an identifier kept apart from the one `key` names. */
  private keptApartFrom(profileId: string, key: string): boolean {
    const partners = this.apart.get(key);
    if (partners === undefined) return false;
    return partners.some((partner) => {
      const holder = this.signals.get(partner);
      return holder !== undefined && this.find(holder) === profileId;
    });
  }

  /** Whether one of the two surviving profiles holds an identifier kept apart from one the other holds. */
  private splitByUnmerge(x: string, y: string): boolean {
    for (const [key, partners] of this.apart) {
      const holder = this.signals.get(key);
      if (holder === undefined || this.find(holder) !== x) continue;
      if (partners.some((p) => this.signals.get(p) !== undefined && this.find(this.signals.get(p)!) === y)) return true;
    }
    return false;
  }

  /** Resolves one event, updating the graph. Events must come in partition order. */
  resolveEvent(identity: EventIdentity, messageId: string): Resolution {
    const { anonymousId, userId, previousId } = identity;
    const valueOf = { email: identity.email, phone: identity.phone, anonymous_id: anonymousId };
    const others: Array<[SignalType, string | null, string | undefined]> = this.rules.priority.map((type) => [type, valueOf[type], this.owner(type, valueOf[type])]);
    let target: string;
    let method: ResolutionMethod;

    if (userId !== null) {
      const known = this.owner('user_id', userId);
      const anonymous = others.find(([, , owner]) => owner !== undefined && !this.identified(owner) && !this.keptApartFrom(owner, signalKey('user_id', userId)));
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
      this.attach('user_id', userId, target, messageId);
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
      if (current === undefined) this.attach(type, value, target, messageId);
      else if (current !== this.find(target) && !this.identified(current)) {
        this.merge(current, target, userId !== null ? 'identify' : 'trait', type, messageId);
      }
    }

    if (previousId !== null && userId !== null) {
      const asUser = this.owner('user_id', previousId);
      const previous = asUser ?? this.owner('anonymous_id', previousId);
      if (previous === undefined) this.attach('user_id', previousId, target, messageId);
      else this.merge(previous, target, 'alias', asUser !== undefined ? 'user_id' : 'anonymous_id', messageId);
    }
    return { profileId: target, method };
  }
}
