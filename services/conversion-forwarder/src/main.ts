#!/usr/bin/env node
import { runService } from '@svc/service';
import { forwarderService } from './service';

runService(forwarderService);
