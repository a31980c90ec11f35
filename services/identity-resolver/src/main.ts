#!/usr/bin/env node
import { runService } from '@svc/service';
import { resolverService } from './service';

runService(resolverService);
