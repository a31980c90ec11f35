#!/usr/bin/env node
import { runService } from '@svc/service';
import { consentService } from './service';

runService(consentService);
